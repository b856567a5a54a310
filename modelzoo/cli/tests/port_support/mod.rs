//! What the `modelzoo port` end-to-end tests share: the test projects (port/tests/data/), a
//! port run of the real binary with its report read back, and the check that the project was
//! never written.

use modelzoo_testkit::copy_dir;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

pub fn project(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../port/tests/data")
        .join(name)
}

/// A copy of a test project in a temp dir (the baseline runs in it and may write there).
pub fn copy_project(name: &str, tmp: &Path) -> PathBuf {
    let dst = tmp.join(name);
    copy_dir(&project(name), &dst);
    dst
}

pub struct Ported {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
    pub json: Value,
    pub md: String,
    pub out: PathBuf,
}

pub fn port(src: &Path, out: &Path, env: &[(&str, &str)], cmd: &[&str]) -> Ported {
    port_with(src, out, &[], env, cmd)
}

/// Everything in `dir` that a run could change: every entry's path, kind, permission bits and
/// bytes (a symlink's target), sorted.
pub fn snapshot(dir: &Path) -> Vec<(PathBuf, String, u32, Vec<u8>)> {
    use std::os::unix::fs::PermissionsExt;
    let mut all = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            let rel = path.strip_prefix(dir).unwrap().to_path_buf();
            let mode = meta.permissions().mode();
            if meta.file_type().is_symlink() {
                let target = std::fs::read_link(&path).unwrap();
                all.push((
                    rel,
                    "link".into(),
                    mode,
                    target.into_os_string().into_encoded_bytes(),
                ));
            } else if meta.is_dir() {
                all.push((rel, "dir".into(), mode, Vec::new()));
                stack.push(path);
            } else {
                all.push((rel, "file".into(), mode, std::fs::read(&path).unwrap()));
            }
        }
    }
    all.sort();
    all
}

/// `modelzoo port` with `args` before `--`; asserts that it left `src` exactly as it was.
pub fn port_with(
    src: &Path,
    out: &Path,
    args: &[&str],
    env: &[(&str, &str)],
    cmd: &[&str],
) -> Ported {
    let before = snapshot(src);
    let mut c = Command::new(env!("CARGO_BIN_EXE_modelzoo"));
    c.arg("port")
        .arg(src)
        .arg("--out")
        .arg(out)
        .args(["--baseline-device", "cpu", "--timeout", "300"])
        .args(args)
        .arg("--")
        .args(cmd);
    let p = finish(c, out, env);
    assert!(
        snapshot(src) == before,
        "the port wrote into the project {}\n{}",
        src.display(),
        p.context()
    );
    p
}

/// `modelzoo port --recheck DST`.
pub fn recheck(out: &Path, env: &[(&str, &str)]) -> Ported {
    let mut c = Command::new(env!("CARGO_BIN_EXE_modelzoo"));
    c.arg("port").arg("--recheck").arg(out);
    finish(c, out, env)
}

pub fn finish(mut c: Command, out: &Path, env: &[(&str, &str)]) -> Ported {
    c.env_remove("TORCH_SDAA_BANNER")
        .env_remove("SDAA_EMU_PERTURB");
    for (k, v) in env {
        c.env(k, v);
    }
    let o = c.output().unwrap();
    let read = |name: &str| std::fs::read_to_string(out.join(name)).unwrap_or_default();
    Ported {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        json: serde_json::from_str(&read("port.json")).unwrap_or(Value::Null),
        md: read("PORT.md"),
        out: out.to_path_buf(),
    }
}

/// `md` without its code (fenced blocks and inline code spans, matched by their backtick
/// runs as CommonMark does): what is left is what renders as Markdown.
pub fn outside_code(md: &str) -> String {
    let mut out = String::new();
    let mut fence: Option<String> = None;
    for line in md.lines() {
        let t = line.trim_start();
        if let Some(f) = &fence {
            if t.starts_with(f.as_str()) {
                fence = None;
            }
            continue;
        }
        if t.starts_with("```") {
            fence = Some(t.chars().take_while(|&c| c == '`').collect());
            continue;
        }
        let b: Vec<char> = line.chars().collect();
        let mut i = 0;
        while i < b.len() {
            if b[i] == '\\' && i + 1 < b.len() {
                out.push(b[i]);
                out.push(b[i + 1]);
                i += 2;
                continue;
            }
            if b[i] == '`' {
                let n = b[i..].iter().take_while(|&&c| c == '`').count();
                // The closing run: exactly n backticks.
                let mut j = i + n;
                let mut close = None;
                while j < b.len() {
                    if b[j] == '`' {
                        let m = b[j..].iter().take_while(|&&c| c == '`').count();
                        if m == n {
                            close = Some(j + m);
                            break;
                        }
                        j += m;
                    } else {
                        j += 1;
                    }
                }
                match close {
                    Some(end) => {
                        out.push_str("CODE");
                        i = end;
                    }
                    None => {
                        out.extend(&b[i..i + n]);
                        i += n;
                    }
                }
                continue;
            }
            out.push(b[i]);
            i += 1;
        }
        out.push('\n');
    }
    out
}

impl Ported {
    pub fn context(&self) -> String {
        format!(
            "exit {}\n--- stdout\n{}\n--- stderr\n{}\n--- PORT.md\n{}",
            self.code, self.stdout, self.stderr, self.md
        )
    }
}
