//! Each model's output directory `<work-dir>/<name>/`, emptied before its run so a log left by
//! an earlier run cannot pass for this one — but only when CI made it. A directory CI creates
//! carries a marker file ([`MARKER`]); one that exists without it and holds anything is the
//! user's (a `--work-dir` pointing at a repository would otherwise wipe a model's sources),
//! and the check refuses to start rather than delete it.

use std::io;
use std::path::{Path, PathBuf};

/// The file that marks a directory as CI's own, inside it.
pub const MARKER: &str = ".modelzoo-ci";

const MARKER_TEXT: &str =
    "This directory was created by `modelzoo ci`; it is emptied at the start of each run.\n";

/// Why `dir` is not CI's to empty, or `None` when it is: absent, an empty directory, or a
/// directory carrying [`MARKER`]. A symbolic link is never CI's (it may lead anywhere).
pub fn foreign(dir: &Path) -> Option<String> {
    let meta = match std::fs::symlink_metadata(dir) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return None,
        Err(e) => return Some(format!("cannot inspect it: {e}")),
    };
    if meta.file_type().is_symlink() {
        return Some("it is a symbolic link".into());
    }
    if !meta.is_dir() {
        return Some(format!(
            "it is {}, not a directory",
            model_config::files::kind(meta.file_type())
        ));
    }
    if std::fs::symlink_metadata(dir.join(MARKER)).is_ok_and(|m| m.is_file()) {
        return None;
    }
    let mut names: Vec<String> = match std::fs::read_dir(dir) {
        Ok(entries) => entries
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect(),
        Err(e) => return Some(format!("cannot list it: {e}")),
    };
    if names.is_empty() {
        return None;
    }
    names.sort();
    let shown: Vec<String> = names.iter().take(3).cloned().collect();
    let more = names.len().saturating_sub(3);
    Some(format!(
        "it holds files modelzoo ci did not create ({}{})",
        shown.join(", "),
        if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        }
    ))
}

/// Makes `dir` an empty directory of CI's own (marked), removing what an earlier run left;
/// refuses (never deletes) a directory that is not CI's.
pub fn fresh(dir: &Path) -> Result<(), String> {
    if let Some(why) = foreign(dir) {
        return Err(refusal(dir, &why));
    }
    if dir.exists() {
        std::fs::remove_dir_all(dir).map_err(|e| format!("cannot clear {}: {e}", dir.display()))?;
    }
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    std::fs::write(dir.join(MARKER), MARKER_TEXT)
        .map_err(|e| format!("cannot write {}: {e}", dir.join(MARKER).display()))
}

/// The message for a directory CI will not use.
pub fn refusal(dir: &Path, why: &str) -> String {
    format!(
        "{}: {why}; modelzoo ci empties a model's output directory before each run and only \
         does so for a directory it created (marked with {MARKER}) — give another --work-dir, \
         or move those files away",
        dir.display()
    )
}

/// The first of `dirs` that is not CI's, with the message.
pub fn first_foreign(dirs: &[PathBuf]) -> Option<String> {
    dirs.iter()
        .find_map(|d| foreign(d).map(|why| refusal(d, &why)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_absent_empty_or_marked_directory_is_cis() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path().join("m");
        assert_eq!(foreign(&d), None, "absent");
        std::fs::create_dir(&d).unwrap();
        assert_eq!(foreign(&d), None, "empty");
        for f in ["d.txt", "a.txt", "c.txt", "b.txt"] {
            std::fs::write(d.join(f), "mine").unwrap();
        }
        assert_eq!(
            foreign(&d).as_deref(),
            Some("it holds files modelzoo ci did not create (a.txt, b.txt, c.txt and 1 more)")
        );
        let err = fresh(&d).unwrap_err();
        assert!(err.contains("give another --work-dir"), "{err}");
        assert!(d.join("a.txt").is_file(), "refused, and nothing deleted");

        let link = tmp.path().join("link");
        std::os::unix::fs::symlink(tmp.path().join("elsewhere"), &link).unwrap();
        assert_eq!(foreign(&link).as_deref(), Some("it is a symbolic link"));

        let own = tmp.path().join("own");
        fresh(&own).unwrap();
        std::fs::write(own.join("old.log"), "from an earlier run").unwrap();
        assert_eq!(foreign(&own), None, "marked");
        fresh(&own).unwrap();
        assert!(!own.join("old.log").exists());
        assert!(own.join(MARKER).is_file());
    }
}
