//! Globs the tool expands itself: a quoted `'runs/seed*.log'` reaches it unexpanded.

use std::path::{Path, PathBuf};

/// Expand `*`, `?` and `[…]` in the file-name parts of `pattern` (a shell would have done it
/// for an unquoted glob; a quoted one reaches the tool as is). A pattern without wildcards is
/// returned as it is; one that matches nothing is an error naming it. Matches are sorted.
pub fn expand_glob(pattern: &Path) -> Result<Vec<PathBuf>, String> {
    let s = pattern.to_string_lossy();
    if !s.contains(['*', '?', '[']) {
        return Ok(vec![pattern.to_path_buf()]);
    }
    let mut found: Vec<PathBuf> = vec![PathBuf::new()];
    for comp in pattern.components() {
        let part = comp.as_os_str().to_string_lossy();
        let wild =
            matches!(comp, std::path::Component::Normal(_)) && part.contains(['*', '?', '[']);
        let mut next = Vec::new();
        for base in &found {
            if !wild {
                next.push(base.join(comp.as_os_str()));
                continue;
            }
            let dir = if base.as_os_str().is_empty() {
                Path::new(".")
            } else {
                base.as_path()
            };
            let Ok(entries) = std::fs::read_dir(dir) else {
                continue;
            };
            for e in entries.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                // Like a shell: a leading dot is matched only by a pattern starting with one.
                if name.starts_with('.') && !part.starts_with('.') {
                    continue;
                }
                if glob_match(part.as_bytes(), name.as_bytes()) {
                    next.push(base.join(&name));
                }
            }
        }
        found = next;
    }
    found.retain(|p| p.exists());
    found.sort();
    if found.is_empty() {
        return Err(format!(
            "`{s}` matches no file — check the pattern (quote it so that the tool expands it, or let the shell do it)"
        ));
    }
    Ok(found)
}

/// Shell-style match of one name: `*` any run, `?` one character, `[abc]` / `[a-z]` / `[!a]`
/// one of a set (bytes).
fn glob_match(p: &[u8], s: &[u8]) -> bool {
    match p.first() {
        None => s.is_empty(),
        Some(b'*') => (0..=s.len()).any(|k| glob_match(&p[1..], &s[k..])),
        Some(b'?') => !s.is_empty() && glob_match(&p[1..], &s[1..]),
        Some(b'[') => {
            let Some(end) = p.iter().skip(2).position(|&c| c == b']').map(|i| i + 2) else {
                return !s.is_empty() && s[0] == b'[' && glob_match(&p[1..], &s[1..]);
            };
            let Some(&c) = s.first() else {
                return false;
            };
            let (negate, set) = match p[1] {
                b'!' | b'^' => (true, &p[2..end]),
                _ => (false, &p[1..end]),
            };
            let mut hit = false;
            let mut i = 0;
            while i < set.len() {
                if i + 2 < set.len() && set[i + 1] == b'-' {
                    hit |= set[i] <= c && c <= set[i + 2];
                    i += 3;
                } else {
                    hit |= set[i] == c;
                    i += 1;
                }
            }
            hit != negate && glob_match(&p[end + 1..], &s[1..])
        }
        Some(&c) => s.first() == Some(&c) && glob_match(&p[1..], &s[1..]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_like_a_shell() {
        assert!(glob_match(b"run*.log", b"run1.log"));
        assert!(glob_match(b"run?.log", b"run2.log"));
        assert!(!glob_match(b"run?.log", b"run12.log"));
        assert!(glob_match(b"run[0-9].log", b"run7.log"));
        assert!(!glob_match(b"run[!0-9].log", b"run7.log"));
        assert!(!glob_match(b"*.log", b"run.json"));
        let dir = tempfile::tempdir().unwrap();
        for name in ["seed2.log", "seed1.log", "other.txt", ".seed3.log"] {
            std::fs::write(dir.path().join(name), "x").unwrap();
        }
        let got = expand_glob(&dir.path().join("seed*.log")).unwrap();
        assert_eq!(
            got,
            vec![dir.path().join("seed1.log"), dir.path().join("seed2.log")]
        );
        let err = expand_glob(&dir.path().join("none*.log")).unwrap_err();
        assert!(err.contains("matches no file"), "{err}");
        // No wildcard: the path as given (a missing file is the reader's error to report).
        let plain = dir.path().join("missing.log");
        assert_eq!(expand_glob(&plain).unwrap(), vec![plain]);
    }
}
