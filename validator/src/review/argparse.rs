//! What a Python script's argparse parser accepts, read statically — the script is never run.
//!
//! The options are the string literals of every `.add_argument('--name', '-n', …)` call in the
//! script and the local modules it imports (a ModelZoo run script imports `argument.py`), plus
//! `-h`/`--help`. Whatever cannot be read this way makes the reading give up with the reason,
//! so the rule that uses it says nothing rather than guesses: an option name that is not a
//! plain literal (`'--' + name`, an f-string, `*names`), `parse_known_args` (unknown options are
//! passed on, not refused), subcommands, `parents=` or `prefix_chars=`, a parser class other
//! than argparse's (`HfArgumentParser`, jsonargparse), another argument library (click, fire,
//! hydra, absl, typer), `sys.argv` rewritten before parsing, or no `ArgumentParser` at all.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::files::read_text;

/// The most files one script's reading follows (the script and its local imports).
const MAX_FILES: usize = 30;

/// Argument libraries whose options a reading of argparse calls would miss.
const OTHER_LIBRARIES: &[&str] = &[
    "click",
    "fire",
    "hydra",
    "typer",
    "absl",
    "jsonargparse",
    "simple_parsing",
    "tap",
    "docopt",
];

/// What a script's parser accepts.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Parser {
    /// Every option string, with its dashes (`--batch-size`, `-b`, `--help`).
    pub options: BTreeSet<String>,
    /// argparse's `allow_abbrev` (default True): a unique prefix of a long option is accepted.
    pub allow_abbrev: bool,
    /// The files the options were read from (the script first).
    pub files: Vec<PathBuf>,
}

/// How the parser takes an option given on the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Accepts {
    /// Defined as written.
    Exact,
    /// The unique prefix of this long option (`allow_abbrev`).
    Prefix(String),
    /// A prefix of several long options: argparse stops with "ambiguous option".
    Ambiguous(Vec<String>),
    /// Not defined: argparse stops with "unrecognized arguments".
    No,
}

impl Parser {
    /// How `option` (`--name`) fares, as argparse matches it: exactly, else (with
    /// `allow_abbrev`) as the prefix of the long options starting with it.
    pub fn accepts(&self, option: &str) -> Accepts {
        if self.options.contains(option) {
            return Accepts::Exact;
        }
        if !self.allow_abbrev || !option.starts_with("--") {
            return Accepts::No;
        }
        let matches: Vec<String> = self
            .options
            .iter()
            .filter(|o| o.starts_with("--") && o.starts_with(option))
            .cloned()
            .collect();
        match matches.len() {
            0 => Accepts::No,
            1 => Accepts::Prefix(matches[0].clone()),
            _ => Accepts::Ambiguous(matches),
        }
    }

    /// The defined option closest to `option` (fewest edits, `-h`/`--help` aside), with its
    /// distance.
    pub fn closest(&self, option: &str) -> Option<(&str, usize)> {
        self.options
            .iter()
            .filter(|o| !matches!(o.as_str(), "-h" | "--help"))
            .map(|o| (o.as_str(), super::zoo::distance(o, option)))
            .min_by_key(|&(o, d)| (d, o.len()))
    }
}

/// A token of Python source: what the reading needs, comments and whitespace dropped.
#[derive(Debug, Clone, PartialEq)]
enum Tok {
    /// A string literal's text; `plain` when it has no `f` prefix.
    Str {
        text: String,
        plain: bool,
    },
    Name(String),
    Op(char),
    Num,
}

/// Python source into tokens: strings (prefixes, triple quotes, escapes), names, numbers,
/// operators; comments skipped.
fn tokens(src: &str) -> Vec<Tok> {
    let chars: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '#' {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c.is_whitespace() || c == '\\' {
            i += 1;
        } else if c == '"' || c == '\'' {
            let (tok, next) = string(&chars, i, "");
            out.push(tok);
            i = next;
        } else if c.is_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            let is_prefix = word.len() <= 2
                && word
                    .chars()
                    .all(|p| matches!(p.to_ascii_lowercase(), 'r' | 'b' | 'u' | 'f'));
            if is_prefix && i < chars.len() && (chars[i] == '"' || chars[i] == '\'') {
                let (tok, next) = string(&chars, i, &word.to_ascii_lowercase());
                out.push(tok);
                i = next;
            } else {
                out.push(Tok::Name(word));
            }
        } else if c.is_ascii_digit() {
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '.') {
                i += 1;
            }
            out.push(Tok::Num);
        } else {
            out.push(Tok::Op(c));
            i += 1;
        }
    }
    out
}

/// The string literal opening at `chars[at]` (a quote) with `prefix`; the token and where the
/// source goes on.
fn string(chars: &[char], at: usize, prefix: &str) -> (Tok, usize) {
    let q = chars[at];
    let triple = chars.get(at + 1) == Some(&q) && chars.get(at + 2) == Some(&q);
    let mut i = if triple { at + 3 } else { at + 1 };
    let start = i;
    let end;
    loop {
        if i >= chars.len() {
            end = chars.len();
            break;
        }
        let c = chars[i];
        if c == '\\' {
            i += 2;
            continue;
        }
        if !triple && c == '\n' {
            end = i;
            break;
        }
        if c == q && (!triple || (chars.get(i + 1) == Some(&q) && chars.get(i + 2) == Some(&q))) {
            end = i;
            i += if triple { 3 } else { 1 };
            break;
        }
        i += 1;
    }
    let text: String = chars[start..end.min(chars.len())].iter().collect();
    (
        Tok::Str {
            text,
            plain: !prefix.contains('f'),
        },
        i,
    )
}

/// What one file defines and imports.
#[derive(Default)]
struct FileParse {
    options: Vec<String>,
    parsers: usize,
    no_abbrev: bool,
    imports: Vec<String>,
}

/// Reads one file's tokens; `Err` with why the parser cannot be read statically.
fn parse_file(toks: &[Tok]) -> Result<FileParse, String> {
    let mut out = FileParse::default();
    let name = |i: usize| match toks.get(i) {
        Some(Tok::Name(n)) => Some(n.as_str()),
        _ => None,
    };
    let op = |i: usize, c: char| toks.get(i) == Some(&Tok::Op(c));
    for i in 0..toks.len() {
        let Some(n) = name(i) else { continue };
        match n {
            "add_argument" if op(i + 1, '(') && i > 0 && op(i - 1, '.') => {
                out.options.extend(option_names(toks, i + 2)?);
            }
            "ArgumentParser" if op(i + 1, '(') => {
                out.parsers += 1;
                let (args, _) = call_args(toks, i + 2);
                for (k, t) in args.iter().enumerate() {
                    let kw = |w: &str| {
                        *t == Tok::Name(w.into()) && args.get(k + 1) == Some(&Tok::Op('='))
                    };
                    if kw("prefix_chars") || kw("parents") {
                        return Err(
                            "its ArgumentParser takes prefix_chars= or parents= (options from elsewhere)"
                                .into(),
                        );
                    }
                    if kw("allow_abbrev") && args.get(k + 2) == Some(&Tok::Name("False".into())) {
                        out.no_abbrev = true;
                    }
                }
            }
            _ if n.ends_with("ArgumentParser") && n != "ArgumentParser" && op(i + 1, '(') => {
                return Err(format!(
                    "its parser is a {n}, whose options are not add_argument calls"
                ));
            }
            "parse_known_args" | "parse_known_intermixed_args" => {
                return Err(format!(
                    "it calls {n} (unknown options are passed on, not refused)"
                ));
            }
            "add_subparsers" => return Err("it has subcommands (add_subparsers)".into()),
            "argv" if i > 0 && op(i - 1, '.') => {
                let assigned = op(i + 1, '=') && !op(i + 2, '=');
                let changed = op(i + 1, '.')
                    && matches!(
                        name(i + 2),
                        Some("remove" | "pop" | "clear" | "insert" | "append" | "extend")
                    );
                let deleted = op(i + 1, '[') && i >= 3 && name(i - 3) == Some("del");
                if assigned || changed || deleted {
                    return Err("it rewrites sys.argv before parsing".into());
                }
            }
            "import" | "from" => {
                // `import a.b, c` / `from .a.b import c, d`: the dotted module (with its
                // leading dots) and, after `from`, the names (possible submodules).
                let mut j = i + 1;
                let mut module = String::new();
                while let Some(t) = toks.get(j) {
                    match t {
                        Tok::Op('.') => module.push('.'),
                        Tok::Name(w) if w != "import" && w != "as" => module.push_str(w),
                        _ => break,
                    }
                    j += 1;
                }
                let top = module
                    .trim_start_matches('.')
                    .split('.')
                    .next()
                    .unwrap_or("");
                if OTHER_LIBRARIES.contains(&top) {
                    return Err(format!("it uses the {top} library for its arguments"));
                }
                if n == "from" && name(j) == Some("import") {
                    let mut k = j + 1;
                    while let Some(t) = toks.get(k) {
                        match t {
                            Tok::Name(w) if w != "as" => {
                                let sep = if module.ends_with('.') { "" } else { "." };
                                out.imports.push(format!("{module}{sep}{w}"));
                                if toks.get(k + 1) == Some(&Tok::Name("as".into())) {
                                    k += 2;
                                }
                            }
                            Tok::Op(',') | Tok::Op('(') | Tok::Op(')') => {}
                            _ => break,
                        }
                        k += 1;
                    }
                }
                if !module.is_empty() {
                    out.imports.push(module);
                }
            }
            _ => {}
        }
    }
    Ok(out)
}

/// The tokens of a call's arguments from `at` (just past `(`) to its closing parenthesis, and
/// where that is.
fn call_args(toks: &[Tok], at: usize) -> (&[Tok], usize) {
    let mut depth = 0usize;
    for (k, t) in toks.iter().enumerate().skip(at) {
        match t {
            Tok::Op('(' | '[' | '{') => depth += 1,
            Tok::Op(')' | ']' | '}') if depth == 0 => return (&toks[at..k], k),
            Tok::Op(')' | ']' | '}') => depth -= 1,
            _ => {}
        }
    }
    (&toks[at.min(toks.len())..], toks.len())
}

/// The option strings of an `add_argument(` call whose arguments start at `at`: its leading
/// string literals that begin with `-` (a positional's name is not an option). `Err` when the
/// first name is not a plain literal.
fn option_names(toks: &[Tok], at: usize) -> Result<Vec<String>, String> {
    let (args, _) = call_args(toks, at);
    let mut names = Vec::new();
    let mut k = 0;
    loop {
        // One argument: adjacent plain literals (implicit concatenation), then `,` or the end.
        let mut text = String::new();
        let mut literal = false;
        while let Some(Tok::Str {
            text: t,
            plain: true,
        }) = args.get(k)
        {
            text.push_str(t);
            literal = true;
            k += 1;
        }
        let ends = matches!(args.get(k), None | Some(Tok::Op(',')));
        if !(literal && ends) {
            // Not a plain literal: after the names, the keywords (or `**kwargs`) begin; as the
            // first argument, the name is computed.
            if names.is_empty() {
                return Err(
                    "an add_argument call builds its option name (not a plain string literal)"
                        .into(),
                );
            }
            return Ok(names);
        }
        if !text.starts_with('-') {
            // A positional argument: not an option.
            return Ok(names);
        }
        names.push(text);
        if args.get(k).is_none() {
            return Ok(names);
        }
        k += 1; // the comma
    }
}

/// The local file a module name resolves to from `from_dir` (`a.b` → `a/b.py` or
/// `a/b/__init__.py`; leading dots relative to `from_dir`, else tried from `from_dir` and
/// `run_dir`), kept only inside `run_dir`.
fn resolve(module: &str, from_dir: &Path, run_dir: &Path) -> Option<PathBuf> {
    let dots = module.len() - module.trim_start_matches('.').len();
    let rest = module.trim_start_matches('.');
    if rest.is_empty() {
        return None;
    }
    let rel: PathBuf = rest.split('.').collect();
    let bases: Vec<PathBuf> = if dots > 0 {
        let mut b = from_dir.to_path_buf();
        for _ in 1..dots {
            b = b.parent()?.to_path_buf();
        }
        vec![b]
    } else {
        vec![from_dir.to_path_buf(), run_dir.to_path_buf()]
    };
    let root = std::fs::canonicalize(run_dir).ok()?;
    bases.iter().find_map(|b| {
        [
            b.join(&rel).with_extension("py"),
            b.join(&rel).join("__init__.py"),
        ]
        .into_iter()
        .filter_map(|p| std::fs::canonicalize(&p).ok())
        .find(|p| p.starts_with(&root) && p.is_file())
    })
}

/// The parser of `script` (run in `run_dir`) and of the local modules it imports, or why it
/// cannot be read statically.
pub(crate) fn read(script: &Path, run_dir: &Path) -> Result<Parser, String> {
    let first = std::fs::canonicalize(script).map_err(|e| format!("cannot read it: {e}"))?;
    let mut queue = vec![first];
    let mut files: Vec<PathBuf> = Vec::new();
    let mut options = BTreeSet::from(["-h".to_string(), "--help".to_string()]);
    let (mut parsers, mut no_abbrev) = (0, false);
    while let Some(file) = queue.pop() {
        if files.contains(&file) || files.len() >= MAX_FILES {
            continue;
        }
        let text = read_text(&file).ok_or_else(|| format!("cannot read {}", file.display()))?;
        let parsed = parse_file(&tokens(&text))?;
        parsers += parsed.parsers;
        no_abbrev |= parsed.no_abbrev;
        options.extend(parsed.options);
        let dir = file.parent().unwrap_or(run_dir).to_path_buf();
        for module in parsed.imports.iter().rev() {
            if let Some(p) = resolve(module, &dir, run_dir) {
                queue.push(p);
            }
        }
        files.push(file);
    }
    if parsers == 0 {
        return Err("no argparse ArgumentParser in it or the local modules it imports".into());
    }
    Ok(Parser {
        options,
        allow_abbrev: !no_abbrev,
        files,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(src: &str) -> Result<BTreeSet<String>, String> {
        parse_file(&tokens(src)).map(|p| p.options.into_iter().collect())
    }

    fn set(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn option_literals_with_aliases_are_read_and_strings_and_comments_skipped() {
        let src = r#"
import argparse
parser = argparse.ArgumentParser(description="x (see --not-an-option)")
parser.add_argument('-b', '--batch-size', type=int, default=32)
parser.add_argument("--nnode", type=int,
                    help='nodes')  # parser.add_argument('--commented')
group = parser.add_argument_group("opt")
group.add_argument(
    "--lr", "--learning_rate",
    default=0.1,
)
parser.add_argument('data')  # positional
s = """parser.add_argument('--in-a-docstring')"""
parser.add_argument(r'--raw', action='store_true')
parser.add_argument('--con' 'cat')
"#;
        assert_eq!(
            parse(src).unwrap(),
            set(&[
                "-b",
                "--batch-size",
                "--nnode",
                "--lr",
                "--learning_rate",
                "--raw",
                "--concat"
            ])
        );
    }

    #[test]
    fn what_cannot_be_read_statically_gives_up_with_the_reason() {
        for (src, why) in [
            ("p.add_argument('--' + name)\n", "builds its option name"),
            ("p.add_argument(f'--{name}')\n", "builds its option name"),
            ("p.add_argument(*names)\n", "builds its option name"),
            ("args, rest = p.parse_known_args()\n", "parse_known_args"),
            ("sub = p.add_subparsers()\n", "subcommands"),
            (
                "p = ArgumentParser(parents=[base])\n",
                "prefix_chars= or parents=",
            ),
            ("p = HfArgumentParser((A, B))\n", "HfArgumentParser"),
            ("import click\n", "click"),
            ("from hydra import main\n", "hydra"),
            ("sys.argv = sys.argv[:1]\n", "rewrites sys.argv"),
            ("sys.argv.remove('--x')\n", "rewrites sys.argv"),
        ] {
            let err = parse(src).unwrap_err();
            assert!(err.contains(why), "{src}: {err}");
        }
        // `==` is a comparison, not an assignment.
        assert!(parse("if sys.argv == []: pass\n").is_ok());
    }

    /// Cut-off source (an unclosed string or call, a lone backslash or quote) reads without a
    /// panic, every prefix of a real parser included.
    #[test]
    fn cut_off_source_never_panics() {
        let src = "p = argparse.ArgumentParser()\np.add_argument('-b', \"--bs\", type=int)  # c\nx = r'''a\\'''\n";
        for end in 0..=src.len() {
            if src.is_char_boundary(end) {
                let _ = parse_file(&tokens(&src[..end]));
            }
        }
        for s in [
            "'",
            "'''",
            "f'",
            "\\",
            "p.add_argument(",
            "p.add_argument('--x",
            "from . import",
        ] {
            let _ = parse_file(&tokens(s));
        }
        assert_eq!(parse(src).unwrap(), set(&["-b", "--bs"]));
    }

    #[test]
    fn options_match_as_argparse_matches_them() {
        let p = Parser {
            options: set(&[
                "-h",
                "--help",
                "--nnode",
                "--batch-size",
                "--lr",
                "--lr_min",
            ]),
            allow_abbrev: true,
            files: Vec::new(),
        };
        assert_eq!(p.accepts("--nnode"), Accepts::Exact);
        assert_eq!(p.accepts("--nnodes"), Accepts::No);
        assert_eq!(p.accepts("--batch_size"), Accepts::No, "_ and - differ");
        assert_eq!(p.accepts("--batch"), Accepts::Prefix("--batch-size".into()));
        assert_eq!(p.accepts("--lr"), Accepts::Exact, "exact beats prefix");
        assert_eq!(
            p.accepts("--l"),
            Accepts::Ambiguous(vec!["--lr".into(), "--lr_min".into()])
        );
        assert_eq!(p.closest("--nnodes"), Some(("--nnode", 1)));
        assert_eq!(p.closest("--batch_size"), Some(("--batch-size", 1)));
        let strict = Parser {
            allow_abbrev: false,
            ..p
        };
        assert_eq!(strict.accepts("--batch"), Accepts::No);
    }
}
