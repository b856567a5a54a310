//! Where a crashed Python run failed in the user's own code: the first traceback in its output
//! that passes through the project, its deepest frame there, and the exception it raised.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// One frame of a traceback (`File "...", line N, in f` and the source line under it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Frame {
    pub file: PathBuf,
    pub line: usize,
    pub function: String,
    /// The source line Python printed under the frame, trimmed.
    pub code: Option<String>,
}

/// A crash located in the project.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Crash {
    /// The deepest frame of the traceback inside the project (closest to the error).
    pub frame: Frame,
    /// The exception line (`RuntimeError: ...`), its first line.
    pub error: String,
}

/// The first traceback in `output` with a frame under `root` (an absolute, canonical path):
/// its deepest frame under `root` and its exception. torchrun's `[rankN]:` line prefixes are
/// read through.
pub fn user_crash(output: &str, root: &Path) -> Option<Crash> {
    let lines: Vec<&str> = output.lines().map(strip_rank_prefix).collect();
    let crash = tracebacks(&lines).find_map(|(frames, error)| {
        let frame = frames
            .into_iter()
            .rev()
            .find(|f| f.file.starts_with(root))?;
        Some(Crash { frame, error })
    });
    crash
}

/// Every traceback in `lines` (rank prefixes already stripped), in order: its frames and its
/// exception line.
fn tracebacks<'a>(lines: &'a [&str]) -> impl Iterator<Item = (Vec<Frame>, String)> + 'a {
    let mut i = 0;
    std::iter::from_fn(move || {
        while i < lines.len() {
            let start = i;
            i += 1;
            if lines[start]
                .trim_start()
                .starts_with("Traceback (most recent call last):")
            {
                let (frames, error, next) = read_traceback(lines, start + 1);
                i = next;
                return Some((frames, error));
            }
        }
        None
    })
}

/// What the kit's CPU baseline says when the call failing is one its shim cannot map.
pub const KIT_ERROR_PREFIX: &str = "modelzoo port CPU baseline:";

/// What CUDA code raises when it reaches a CUDA the CPU baseline does not have: the script
/// called something the shim does not map.
const NO_CUDA: &[&str] = &[
    "Torch not compiled with CUDA enabled",
    "Found no NVIDIA driver",
    "no CUDA GPUs are available",
    "CUDA driver initialization failed",
    "Cannot access accelerator device when none is available",
];

/// The error line when a CPU baseline run failed in the kit rather than in the original: a
/// traceback through the shim (`shim`, its sitecustomize.py), an error of the shim (starting
/// [`KIT_ERROR_PREFIX`]), or CUDA found missing. None: the original's own failure.
pub fn kit_failure(output: &str, shim: &Path) -> Option<String> {
    let lines: Vec<&str> = output.lines().map(strip_rank_prefix).collect();
    let in_a_traceback = tracebacks(&lines).find_map(|(frames, error)| {
        let in_shim = frames
            .iter()
            .any(|f| f.file == shim || f.file.ends_with("port/sitecustomize.py"));
        (in_shim || is_kit_error(&error)).then_some(error)
    });
    if in_a_traceback.is_some() {
        return in_a_traceback;
    }
    lines
        .iter()
        .map(|l| l.trim())
        .find(|l| is_kit_error(l))
        .map(str::to_string)
}

fn is_kit_error(line: &str) -> bool {
    let message = line.split_once(": ").map_or(line, |(_, m)| m);
    message.starts_with(KIT_ERROR_PREFIX)
        || line.starts_with(KIT_ERROR_PREFIX)
        || NO_CUDA.iter().any(|s| line.contains(s))
}

/// `[rank0]: text` → `text` (torchrun's per-rank prefix).
fn strip_rank_prefix(line: &str) -> &str {
    if let Some(rest) = line.strip_prefix("[rank") {
        if let Some((n, text)) = rest.split_once("]:") {
            if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) {
                return text.strip_prefix(' ').unwrap_or(text);
            }
        }
    }
    line
}

/// The frames from `start` on, the exception line after them, and where reading stopped.
fn read_traceback(lines: &[&str], start: usize) -> (Vec<Frame>, String, usize) {
    let mut frames: Vec<Frame> = Vec::new();
    let mut i = start;
    while i < lines.len() {
        let line = lines[i];
        if let Some(frame) = parse_frame(line) {
            frames.push(frame);
            i += 1;
            continue;
        }
        if line.starts_with(' ') || line.starts_with('\t') || line.trim().is_empty() {
            // The source line under a frame, or the carets under it.
            let text = line.trim();
            if let Some(last) = frames.last_mut() {
                if last.code.is_none() && !text.is_empty() && !is_caret_line(text) {
                    last.code = Some(text.to_string());
                }
            }
            i += 1;
            continue;
        }
        return (frames, line.trim().to_string(), i + 1);
    }
    (frames, String::new(), i)
}

fn is_caret_line(text: &str) -> bool {
    text.chars().all(|c| matches!(c, '^' | '~' | ' '))
}

/// `  File "/p/train.py", line 12, in main`.
fn parse_frame(line: &str) -> Option<Frame> {
    let rest = line.trim_start().strip_prefix("File \"")?;
    let (file, rest) = rest.split_once("\", line ")?;
    let (num, function) = match rest.split_once(", in ") {
        Some((n, f)) => (n, f.trim().to_string()),
        None => (rest.trim(), String::new()),
    };
    Some(Frame {
        file: PathBuf::from(file),
        line: num.trim().parse().ok()?,
        function,
        code: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const TRACE: &str = "step 0 loss 2.3
Traceback (most recent call last):
  File \"/work/dst/train.py\", line 40, in <module>
    main()
  File \"/work/dst/train.py\", line 31, in main
    out = model(x.sdaa())
          ^^^^^^^^^^^^^^^
  File \"/venv/lib/python3.11/site-packages/torch/nn/modules/module.py\", line 1779, in _wrapped_call_impl
    return self._call_impl(*args, **kwargs)
RuntimeError: boom
  more text of the message
";

    #[test]
    fn the_deepest_frame_in_the_project_and_the_error() {
        let crash = user_crash(TRACE, Path::new("/work/dst")).unwrap();
        assert_eq!(crash.frame.file, Path::new("/work/dst/train.py"));
        assert_eq!(crash.frame.line, 31);
        assert_eq!(crash.frame.function, "main");
        assert_eq!(crash.frame.code.as_deref(), Some("out = model(x.sdaa())"));
        assert_eq!(crash.error, "RuntimeError: boom");
    }

    #[test]
    fn the_kit_fails_in_its_shim_or_without_cuda_and_the_original_on_its_own() {
        let shim = Path::new("/w/.modelzoo-port/shim/sitecustomize.py");
        let through_shim = "Traceback (most recent call last):\n  File \"/p/t.py\", line 3, in <module>\n    x.foo()\n  File \"/w/.modelzoo-port/shim/sitecustomize.py\", line 9, in foo\n    raise X\nValueError: shim bug\n";
        assert_eq!(
            kit_failure(through_shim, shim).as_deref(),
            Some("ValueError: shim bug")
        );
        let prefixed = "Traceback (most recent call last):\n  File \"/p/t.py\", line 3, in <module>\nRuntimeError: modelzoo port CPU baseline: torch.cuda.foo cannot be mapped\n";
        assert!(kit_failure(prefixed, shim)
            .unwrap()
            .contains("torch.cuda.foo"));
        let no_cuda = "AssertionError: Torch not compiled with CUDA enabled\n";
        assert!(kit_failure(no_cuda, shim).is_some());
        let own = "Traceback (most recent call last):\n  File \"/p/t.py\", line 3, in <module>\nSystemExit: bad data\n";
        assert_eq!(kit_failure(own, shim), None);
    }

    #[test]
    fn torchrun_rank_prefixes_are_read_through_and_foreign_tracebacks_skipped() {
        let text = "Traceback (most recent call last):\n  File \"/elsewhere/x.py\", line 1, in <module>\nValueError: not ours\n\
                    [rank1]: Traceback (most recent call last):\n[rank1]:   File \"/p/t.py\", line 7, in <module>\n[rank1]:     f()\n[rank1]: KeyError: 'k'\n";
        let crash = user_crash(text, Path::new("/p")).unwrap();
        assert_eq!(
            (crash.frame.line, crash.error.as_str()),
            (7, "KeyError: 'k'")
        );
        assert!(user_crash("no traceback here\n", Path::new("/p")).is_none());
    }
}
