//! The commands a model directory documents or runs: the shell scripts' (`test.sh`, `run`,
//! `*.sh`) and the README's (code blocks, and `python`/`torchrun`/`bash` lines outside them),
//! each with the directory it runs in as far as the text says (`cd`, `$script_path`).
//! A reviewer's reading of the shell, not a shell: what cannot be followed (an unknown
//! variable, a `cd` out of the directory) leaves the paths unchecked rather than guessed.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use regex::Regex;

use super::files::normalise;
use crate::markdown;

/// Where a command runs, relative to the model directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Cwd {
    /// Exactly this directory (set by a `cd` the text makes clear, or a script's own dir).
    Exact(PathBuf),
    /// A README command with no `cd` before it: the model directory or `run_scripts/`.
    Either(Vec<PathBuf>),
    /// Not known (a `cd` to somewhere the text does not say, or out of the directory).
    Unknown,
}

/// Where a command comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    Readme,
    Script,
}

/// One simple command (a pipeline stage) with what it reads and writes.
#[derive(Debug, Clone)]
pub(crate) struct Cmd {
    /// The file it is written in (absolute) and its 1-based line.
    pub file: PathBuf,
    pub line: usize,
    pub source: Source,
    pub cwd: Cwd,
    /// Words after expansion of the variables the script sets (unknown ones left as `$x`).
    pub words: Vec<String>,
    /// Files the same file wrote before this command (`tee x`, `> x`), relative to the model
    /// directory where known, else as written.
    pub produced_before: Vec<String>,
}

impl Cmd {
    /// The program: the first word, without a leading path.
    pub fn program(&self) -> &str {
        self.words
            .first()
            .map(|w| w.rsplit('/').next().unwrap_or(w))
            .unwrap_or("")
    }

    /// Whether it starts Python (`python`, `python3.10`, `torchrun`, `python -m torch.distributed…`).
    pub fn is_python(&self) -> bool {
        let p = self.program();
        p == "torchrun" || p == "python" || p.starts_with("python3") || p == "python2"
    }

    /// The Python script it runs (the first `.py` word, not after `-c` / `-m`), with its index.
    pub fn script(&self) -> Option<(usize, &str)> {
        if !self.is_python() {
            return None;
        }
        for (i, w) in self.words.iter().enumerate().skip(1) {
            if w == "-c" || w == "-m" {
                return None;
            }
            if w.ends_with(".py") && !w.starts_with('-') && !w.contains('=') {
                return Some((i, w));
            }
        }
        None
    }

    /// The process count it starts: `--nproc_per_node N` (any spelling, `=` or not) times
    /// `--nnodes N` when given; `None` when it does not say.
    pub fn processes(&self) -> Option<(u64, String)> {
        let per = self.option_value(&["--nproc_per_node", "--nproc-per-node"])?;
        let n: u64 = per.parse().ok()?;
        let nodes = self
            .option_value(&["--nnodes", "--nnode"])
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(1);
        let shown = if nodes > 1 {
            format!("--nproc_per_node {per} --nnodes {nodes}")
        } else {
            format!("--nproc_per_node {per}")
        };
        Some((n * nodes, shown))
    }

    /// The value of the first of `names` given (`--x v` or `--x=v`).
    pub fn option_value(&self, names: &[&str]) -> Option<&str> {
        for (i, w) in self.words.iter().enumerate() {
            for n in names {
                if w == n {
                    return self.words.get(i + 1).map(|s| s.as_str());
                }
                if let Some(v) = w.strip_prefix(n).and_then(|r| r.strip_prefix('=')) {
                    return Some(v);
                }
            }
        }
        None
    }

    /// The config it trains with: `--config X` (or `--cfg`, `-c` after the script), else the
    /// first `.py`/`.yaml`/`.yml` word after the script.
    pub fn config(&self) -> Option<&str> {
        let (at, _) = self.script()?;
        let rest = &self.words[at + 1..];
        const NAMES: [&str; 5] = ["--config", "--cfg", "--config-file", "--config_file", "-c"];
        for (i, w) in rest.iter().enumerate() {
            if NAMES.contains(&w.as_str()) {
                return rest.get(i + 1).map(|s| s.as_str());
            }
            if let Some((name, v)) = w.split_once('=') {
                if NAMES.contains(&name) {
                    return Some(v);
                }
            }
        }
        rest.iter().map(|s| s.as_str()).find(|w| {
            !w.starts_with('-')
                && !w.contains('=')
                && [".py", ".yaml", ".yml"].iter().any(|e| w.ends_with(e))
        })
    }
}

/// The README's commands and every shell script's, in file order.
pub(crate) struct Commands {
    pub all: Vec<Cmd>,
    /// `cd` lines of the README that name another directory than the model's: (line, what it
    /// names, what it should name).
    pub wrong_cd: Vec<(usize, String, String)>,
}

/// Collect the commands of `readme` (absolute path and text) and `scripts`.
/// The shell commands a Python script holds in string literals — `os.system("torchrun
/// --nproc_per_node 4 train.py --config configs/x.py")`, `subprocess.run("python …",
/// shell=True)`, `cmd = f"python …"` — each on its own line number and every other line blank,
/// so they are read as a script's commands with the Python file's line numbers; `None` when it
/// holds none. A literal counts when it starts with `python`, `torchrun` or `bash`.
pub(crate) fn literal_commands(text: &str) -> Option<String> {
    static LITERAL: OnceLock<Regex> = OnceLock::new();
    let re = LITERAL.get_or_init(|| {
        Regex::new(
            r#"(?:^|[^A-Za-z0-9_])[fFrR]{0,2}(["'])((?:python[0-9.]*|torchrun|bash) [^"'\\]*)["']"#,
        )
        .expect("valid regex")
    });
    let mut out = String::new();
    let mut any = false;
    for line in text.lines() {
        let code = line.trim_start();
        if !code.starts_with('#') {
            if let Some(c) = re.captures(line) {
                out.push_str(c[2].trim());
                any = true;
            }
        }
        out.push('\n');
    }
    any.then_some(out)
}

pub(crate) fn collect(
    dir: &Path,
    readme: Option<(&Path, &str)>,
    scripts: &[(PathBuf, String)],
) -> Commands {
    let mut cmds = Commands {
        all: Vec::new(),
        wrong_cd: Vec::new(),
    };
    if let Some((path, text)) = readme {
        readme_commands(dir, path, text, &mut cmds);
    }
    for (path, text) in scripts {
        let rel_dir = path
            .parent()
            .and_then(|p| p.strip_prefix(dir).ok())
            .map(Path::to_path_buf)
            .unwrap_or_default();
        let lines: Vec<(usize, String)> = text
            .lines()
            .enumerate()
            .map(|(i, l)| (i + 1, l.to_string()))
            .collect();
        let mut st = State {
            dir,
            file: path,
            source: Source::Script,
            script_dir: Some(rel_dir.clone()),
            // A run script's command runs where the script was started: its own directory or
            // the model directory (it may `os.chdir` there).
            cwd: if path.extension().is_some_and(|x| x == "py") && !rel_dir.as_os_str().is_empty() {
                Cwd::Either(vec![rel_dir, PathBuf::new()])
            } else {
                Cwd::Exact(rel_dir)
            },
            vars: HashMap::new(),
            produced: Vec::new(),
        };
        st.run(&lines, &mut cmds);
    }
    cmds
}

struct State<'a> {
    dir: &'a Path,
    file: &'a Path,
    source: Source,
    /// A script's own directory (what `$(dirname $0)` is), relative to the model directory.
    script_dir: Option<PathBuf>,
    cwd: Cwd,
    vars: HashMap<String, Option<String>>,
    produced: Vec<String>,
}

impl State<'_> {
    /// Run the (numbered) lines: join continuations, drop comments, split into commands.
    fn run(&mut self, lines: &[(usize, String)], out: &mut Commands) {
        let mut pending: Option<(usize, String)> = None;
        for (no, raw) in lines {
            let t = raw.trim();
            if pending.is_none() && (t.is_empty() || t.starts_with('#')) {
                continue;
            }
            let (start, mut acc) = pending.take().unwrap_or((*no, String::new()));
            if let Some(body) = t.strip_suffix('\\') {
                acc.push_str(body);
                acc.push(' ');
                pending = Some((start, acc));
                continue;
            }
            if !t.starts_with('#') {
                acc.push_str(t);
            }
            self.logical_line(start, &acc, out);
        }
        if let Some((start, acc)) = pending {
            self.logical_line(start, &acc, out);
        }
    }

    fn logical_line(&mut self, line: usize, text: &str, out: &mut Commands) {
        let text = strip_comment(text);
        for segment in split_segments(&text) {
            let words = self.expand_words(&segment.words);
            if words.is_empty() {
                continue;
            }
            // `A=b` alone sets a variable; `A=b cmd` is an environment prefix.
            let mut first = 0;
            while first < words.len() && is_assignment(&words[first]) {
                first += 1;
            }
            if first == words.len() {
                for (w, raw) in words.iter().zip(&segment.words) {
                    let (name, _) = w.split_once('=').unwrap_or((w, ""));
                    let (_, raw_value) = raw.split_once('=').unwrap_or((raw, ""));
                    let value = self.assignment_value(raw_value);
                    self.vars.insert(name.to_string(), value);
                }
                continue;
            }
            let mut words = words[first..].to_vec();
            if words[0] == "export" {
                for (w, raw) in words[1..].iter().zip(segment.words.iter().skip(first + 1)) {
                    if let Some((name, _)) = w.split_once('=') {
                        let (_, raw_value) = raw.split_once('=').unwrap_or((raw, ""));
                        let value = self.assignment_value(raw_value);
                        self.vars.insert(name.to_string(), value);
                    }
                }
                continue;
            }
            if words[0] == "cd" {
                self.cd(line, words.get(1).map(|s| s.as_str()), out);
                continue;
            }
            if words[0] == "sudo" || words[0] == "nohup" || words[0] == "time" {
                words.remove(0);
                if words.is_empty() {
                    continue;
                }
            }
            let cmd = Cmd {
                file: self.file.to_path_buf(),
                line,
                source: self.source,
                cwd: self.cwd.clone(),
                words,
                produced_before: self.produced.clone(),
            };
            out.all.push(cmd);
            for o in segment.outputs {
                let o = self.expand(&o);
                self.produced
                    .push(o.rsplit('/').next().unwrap_or(&o).to_string());
            }
        }
    }

    /// The value a script assigns: the script's directory for `$(dirname ... $0 ...)`
    /// (`$(cd "$(dirname "$0")"; pwd)`, `$(realpath ...)`), the text with known variables
    /// expanded otherwise; `None` (unknown) for other command substitutions.
    fn assignment_value(&self, raw: &str) -> Option<String> {
        let v = raw.trim_matches(|c| c == '"' || c == '\'');
        if v.contains("$0") || v.contains("BASH_SOURCE") {
            if v.contains("dirname") {
                return self.script_dir.as_ref().map(|d| self.abs_marker(d));
            }
            return None;
        }
        if v.contains("$(") || v.contains('`') {
            if let Some(inner) = v
                .strip_prefix("$(realpath ")
                .or_else(|| v.strip_prefix("$(readlink -f "))
                .and_then(|r| r.strip_suffix(')'))
            {
                let e = self.expand(inner.trim_matches('"'));
                return (!e.contains('$')).then_some(e);
            }
            return None;
        }
        let e = self.expand(v);
        (!e.contains('$')).then_some(e)
    }

    /// A directory of the model as an absolute path (what `$script_path` holds at run time).
    fn abs_marker(&self, rel: &Path) -> String {
        self.dir.join(rel).to_string_lossy().into_owned()
    }

    fn expand_words(&self, words: &[String]) -> Vec<String> {
        words.iter().map(|w| self.expand(w)).collect()
    }

    /// `$name` / `${name}` replaced by known values; unknown ones kept as written.
    fn expand(&self, w: &str) -> String {
        static VAR: OnceLock<Regex> = OnceLock::new();
        let re = VAR.get_or_init(|| {
            Regex::new(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")
                .expect("valid regex")
        });
        re.replace_all(w, |c: &regex::Captures| {
            let name = c
                .get(1)
                .or_else(|| c.get(2))
                .map(|m| m.as_str())
                .unwrap_or("");
            match self.vars.get(name) {
                Some(Some(v)) => v.clone(),
                _ => c[0].to_string(),
            }
        })
        .into_owned()
    }

    fn cd(&mut self, line: usize, to: Option<&str>, out: &mut Commands) {
        let Some(to) = to else {
            self.cwd = Cwd::Unknown;
            return;
        };
        if let Some(rest) = zoo_path_rest(to) {
            // A template's `{{model_path}}` or a variable: nothing to compare with.
            if rest.contains(['{', '$', '<']) {
                self.cwd = Cwd::Unknown;
                return;
            }
            self.cwd = match zoo_cd(self.dir, rest) {
                Ok(sub) => Cwd::Exact(sub),
                Err(expected) => {
                    out.wrong_cd.push((line, to.to_string(), expected));
                    Cwd::Unknown
                }
            };
            return;
        }
        if to.contains('$') || to.contains('~') || to == "-" {
            self.cwd = Cwd::Unknown;
            return;
        }
        let target = if Path::new(to).is_absolute() {
            Path::new(to)
                .strip_prefix(self.dir)
                .ok()
                .map(Path::to_path_buf)
        } else {
            match &self.cwd {
                Cwd::Exact(c) => normalise(&c.join(to)),
                Cwd::Either(cands) => cands
                    .iter()
                    .filter_map(|c| normalise(&c.join(to)))
                    .find(|p| self.dir.join(p).is_dir()),
                Cwd::Unknown => None,
            }
        };
        self.cwd = match target {
            Some(t) if self.dir.join(&t).is_dir() => Cwd::Exact(t),
            _ => Cwd::Unknown,
        };
    }
}

/// What follows `<ModelZoo_path>/` (any spelling of the placeholder) in a README `cd`.
fn zoo_path_rest(to: &str) -> Option<&str> {
    static ZOO: OnceLock<Regex> = OnceLock::new();
    let re = ZOO.get_or_init(|| {
        Regex::new(r"(?i)^[<{\[]?\s*(?:your_?)?model_?zoo(?:_?(?:path|root|dir))?\s*[>}\]]?/(.+)$")
            .expect("valid regex")
    });
    re.captures(to).and_then(|c| c.get(1)).map(|m| m.as_str())
}

/// A README's `cd <ModelZoo_path>/REST`: `Ok(subdirectory)` when REST is this model's
/// directory (or one under it, which must exist), `Err(what REST should start with)`.
fn zoo_cd(dir: &Path, rest: &str) -> Result<PathBuf, String> {
    let rest = rest.trim_end_matches('/');
    let abs = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    let comps: Vec<String> = abs
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let named: Vec<&str> = rest
        .split('/')
        .filter(|s| !s.is_empty() && *s != ".")
        .collect();
    // This model's path in the zoo: from its framework directory (PyTorch/...) on.
    let zoo_start = comps
        .iter()
        .rposition(|c| ["PyTorch", "PaddlePaddle", "TecoInference"].contains(&c.as_str()));
    let model: Vec<&str> = match zoo_start {
        Some(i) => comps[i..].iter().map(|s| s.as_str()).collect(),
        None => {
            // Not in a zoo tree: the model directory's name must be among the named components.
            let name = comps.last().map(|s| s.as_str()).unwrap_or("");
            return match named.iter().position(|c| *c == name) {
                // This model's own path: a subdirectory the directory lacks is no wrong cd
                // (see below).
                Some(i) => Ok(named[i + 1..].iter().collect()),
                None => Err(name.to_string()),
            };
        }
    };
    if named.len() >= model.len() && named[..model.len()] == model[..] {
        // The cd names this model's own path. A subdirectory the directory lacks (a README's
        // `cd …/run_scripts` where run_scripts/ is missing) is not a wrong cd — it was reported
        // as "not this model's directory (that is <the same path>)": the commands after it are
        // looked for there, so paths.command names what is missing.
        return Ok(named[model.len()..].iter().collect());
    }
    // What it should say: this model's path, and the subdirectory it meant when it has one.
    match named.last().filter(|last| dir.join(last).is_dir()) {
        Some(last) => Err(format!("{}/{last}", model.join("/"))),
        None => Err(model.join("/")),
    }
}

/// Commands of a README: its fenced code, and command lines outside it.
fn readme_commands(dir: &Path, path: &Path, text: &str, out: &mut Commands) {
    let lines = markdown::scan(text);
    let mut numbered = Vec::new();
    for l in &lines {
        let t = l.text.trim();
        if t.starts_with("```") || t.starts_with("~~~") {
            // A fence ends a command: keep blocks apart.
            numbered.push((l.no, String::new()));
            continue;
        }
        if l.code || looks_like_command(t) {
            // Prompts (`$ python x.py`) lose their prompt.
            let t = t.strip_prefix("$ ").unwrap_or(t);
            numbered.push((l.no, t.to_string()));
        } else {
            numbered.push((l.no, String::new()));
        }
    }
    let mut st = State {
        dir,
        file: path,
        source: Source::Readme,
        script_dir: None,
        cwd: Cwd::Either(vec![PathBuf::new(), PathBuf::from("run_scripts")]),
        vars: HashMap::new(),
        produced: Vec::new(),
    };
    st.run(&numbered, out);
}

/// A README line outside code that is a command someone is meant to run.
fn looks_like_command(t: &str) -> bool {
    let t = t.strip_prefix("$ ").unwrap_or(t);
    ["python ", "python3 ", "torchrun ", "bash ", "sh ", "cd "]
        .iter()
        .any(|p| t.starts_with(p))
}

fn is_assignment(w: &str) -> bool {
    match w.split_once('=') {
        Some((name, _)) => {
            !name.is_empty()
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !name.starts_with(|c: char| c.is_ascii_digit())
        }
        None => false,
    }
}

/// A line with its trailing ` # comment` removed (not inside quotes).
fn strip_comment(s: &str) -> String {
    let mut out = String::new();
    let (mut sq, mut dq) = (false, false);
    let mut prev_space = true;
    for c in s.chars() {
        match c {
            '\'' if !dq => sq = !sq,
            '"' if !sq => dq = !dq,
            '#' if !sq && !dq && prev_space => break,
            _ => {}
        }
        prev_space = c.is_whitespace();
        out.push(c);
    }
    out
}

/// One stage of a command line: its words (quotes removed) and the files it writes.
struct Segment {
    words: Vec<String>,
    outputs: Vec<String>,
}

/// Split a command line into stages at `|`, `||`, `&&`, `;`, `&`, taking redirections
/// (`> f`, `>> f`, `2>&1`) and `tee f` out as outputs.
fn split_segments(s: &str) -> Vec<Segment> {
    let mut segments = Vec::new();
    let mut words: Vec<String> = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let (mut sq, mut dq) = (false, false);
    let mut chars = s.chars().peekable();
    let flush_word = |cur: &mut String, in_word: &mut bool, words: &mut Vec<String>| {
        if *in_word {
            words.push(std::mem::take(cur));
            *in_word = false;
        }
    };
    while let Some(c) = chars.next() {
        if sq {
            if c == '\'' {
                sq = false;
            } else {
                cur.push(c);
            }
            continue;
        }
        if dq {
            if c == '"' {
                dq = false;
            } else if c == '\\' {
                if let Some(n) = chars.next() {
                    cur.push(n);
                }
            } else {
                cur.push(c);
            }
            continue;
        }
        match c {
            // `$(...)` and `` `...` `` are one word, whatever they hold.
            '$' if chars.peek() == Some(&'(') => {
                cur.push(c);
                let mut depth = 0usize;
                for n in chars.by_ref() {
                    cur.push(n);
                    match n {
                        '(' => depth += 1,
                        ')' => {
                            depth -= 1;
                            if depth == 0 {
                                break;
                            }
                        }
                        _ => {}
                    }
                }
                in_word = true;
            }
            '`' => {
                cur.push(c);
                for n in chars.by_ref() {
                    cur.push(n);
                    if n == '`' {
                        break;
                    }
                }
                in_word = true;
            }
            '\'' => {
                sq = true;
                in_word = true;
            }
            '"' => {
                dq = true;
                in_word = true;
            }
            '\\' => {
                if let Some(n) = chars.next() {
                    cur.push(n);
                    in_word = true;
                }
            }
            c if c.is_whitespace() => flush_word(&mut cur, &mut in_word, &mut words),
            '|' | ';' | '&' => {
                // `2>&1` and `>&2` are redirections, not separators.
                if c == '&' && cur.ends_with('>') {
                    cur.push(c);
                    in_word = true;
                    continue;
                }
                flush_word(&mut cur, &mut in_word, &mut words);
                if matches!(chars.peek(), Some('|') | Some('&')) {
                    chars.next();
                }
                segments.push(finish(std::mem::take(&mut words)));
            }
            _ => {
                cur.push(c);
                in_word = true;
            }
        }
    }
    flush_word(&mut cur, &mut in_word, &mut words);
    segments.push(finish(words));
    segments
}

/// Words of a stage with redirections and `tee` taken out.
fn finish(words: Vec<String>) -> Segment {
    let mut kept = Vec::new();
    let mut outputs = Vec::new();
    let mut it = words.into_iter().peekable();
    let is_tee = |w: &str| w == "tee";
    let mut tee = false;
    while let Some(w) = it.next() {
        if kept.is_empty() && is_tee(&w) {
            tee = true;
            continue;
        }
        if tee {
            if !w.starts_with('-') {
                outputs.push(w);
            }
            continue;
        }
        // 2>&1, >&2, 1>/dev/null ...
        let stripped = w.trim_start_matches(|c: char| c.is_ascii_digit());
        // Output redirections only: a word starting with `<` is the README's
        // `<ModelZoo_path>` placeholder far more often than an input redirection.
        if let Some(rest) = stripped
            .strip_prefix(">>")
            .or_else(|| stripped.strip_prefix('>'))
        {
            if rest.starts_with('&') {
                continue;
            }
            let target = if rest.is_empty() {
                it.next()
            } else {
                Some(rest.to_string())
            };
            outputs.extend(target);
            continue;
        }
        kept.push(w);
    }
    Segment {
        words: kept,
        outputs,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_quotes_redirections_and_tee() {
        let s = split_segments(
            r#"python run.py --cfg-options "a=b c" 2>&1 | tee sdaa.log && echo 'x;y' > out.txt"#,
        );
        assert_eq!(s.len(), 3);
        assert_eq!(s[0].words, ["python", "run.py", "--cfg-options", "a=b c"]);
        assert_eq!(s[1].outputs, ["sdaa.log"]);
        assert_eq!(s[2].words, ["echo", "x;y"]);
        assert_eq!(s[2].outputs, ["out.txt"]);
        assert_eq!(strip_comment("python a.py # run it"), "python a.py ");
        let s = split_segments(r#"script_path=$(dirname $(readlink -f "$0")) x=`pwd`"#);
        assert_eq!(
            s[0].words,
            [r#"script_path=$(dirname $(readlink -f "$0"))"#, "x=`pwd`"]
        );
        assert_eq!(strip_comment("echo '#x'"), "echo '#x'");
    }

    #[test]
    fn the_zoo_placeholder_in_any_spelling() {
        assert_eq!(
            zoo_path_rest("<ModelZoo_path>/PyTorch/contrib/A/B"),
            Some("PyTorch/contrib/A/B")
        );
        assert_eq!(zoo_path_rest("<modelzoo-dir>/x"), None);
        assert_eq!(zoo_path_rest("{ModelZoo_path}/x"), Some("x"));
        assert_eq!(zoo_path_rest("run_scripts"), None);
    }

    #[test]
    fn processes_and_scripts() {
        let c = Cmd {
            file: PathBuf::new(),
            line: 1,
            source: Source::Script,
            cwd: Cwd::Unknown,
            words: "torchrun --nproc_per_node=4 --nnodes 2 train.py --config a.py"
                .split(' ')
                .map(String::from)
                .collect(),
            produced_before: vec![],
        };
        assert_eq!(c.script(), Some((4, "train.py")));
        assert_eq!(c.processes().unwrap().0, 8);
        assert_eq!(c.config(), Some("a.py"));
    }
}
