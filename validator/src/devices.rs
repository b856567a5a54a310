//! Which device a training log is of: what its file name says ([`device_of`]) and the
//! evidence in its text that it ran elsewhere ([`wrong_device_evidence`]). validate's
//! `logs.device` rule and compare's baseline check both read logs this way, so it lives in a
//! module both import (neither imports the other's rules).

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::sync::OnceLock;

use regex::Regex;

/// Which device a log's name says: `cuda.log`, `cuda_loss.log`, `gpu.log` → CUDA; `sdaa.log`,
/// `sdaa_loss.log` → SDAA.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Device {
    Cuda,
    Sdaa,
}

pub fn device_of(name: &str) -> Option<Device> {
    let stem = name.rsplit_once('.').map(|(s, _)| s).unwrap_or(name);
    let tokens = name_words(stem);
    let has = |words: &[&str]| {
        tokens
            .iter()
            .any(|t| words.iter().any(|w| t.starts_with(w)))
    };
    let cuda = has(&["cuda", "gpu", "a100", "a800", "v100", "h100", "nvidia"]);
    let sdaa = has(&["sdaa", "teco"]);
    match (cuda, sdaa) {
        (true, false) => Some(Device::Cuda),
        (false, true) => Some(Device::Sdaa),
        _ => None,
    }
}

/// The words of a file name, lowercased: split at every character that is not a letter or
/// digit and where a lowercase letter or digit meets an uppercase one, so the build-in models'
/// `rexnetCifar100Cuda` reads `rexnet`, `cifar100`, `cuda` (an all-caps `SDAA` stays one word).
pub(crate) fn name_words(stem: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut prev: Option<char> = None;
    for c in stem.chars() {
        if !c.is_ascii_alphanumeric() {
            if !word.is_empty() {
                words.push(std::mem::take(&mut word));
            }
            prev = None;
            continue;
        }
        if c.is_ascii_uppercase()
            && prev.is_some_and(|p| p.is_ascii_lowercase() || p.is_ascii_digit())
            && !word.is_empty()
        {
            words.push(std::mem::take(&mut word));
        }
        word.push(c.to_ascii_lowercase());
        prev = Some(c);
    }
    if !word.is_empty() {
        words.push(word);
    }
    words
}

/// Evidence in a log's text that it ran on another device than its name says.
pub fn wrong_device_evidence(dev: Device, line: &str) -> Option<&'static str> {
    static SDAA: OnceLock<[(Regex, &'static str); 4]> = OnceLock::new();
    static OTHER: OnceLock<[(Regex, &'static str); 3]> = OnceLock::new();
    let re = |s: &str| Regex::new(s).expect("valid regex");
    match dev {
        Device::Cuda => {
            let pats = SDAA.get_or_init(|| {
                [
                    (re(r"^\s*Torch-SDAA\s+\|"), "the Torch-SDAA banner"),
                    (re(r#"--device[ =]+['"]?sdaa\b"#), "`--device sdaa`"),
                    (
                        re(r#"(?i)\bdevice['"]?\s*[:=]\s*['"]?sdaa\b"#),
                        "a device of sdaa",
                    ),
                    (re(r"\bsdaa:\d+\b"), "an sdaa:N device"),
                ]
            });
            pats.iter().find(|(r, _)| r.is_match(line)).map(|(_, w)| *w)
        }
        Device::Sdaa => {
            let pats = OTHER.get_or_init(|| {
                [
                    (
                        re(r#"--device[ =]+['"]?(cuda|cpu|gpu)\b"#),
                        "`--device cuda|cpu`",
                    ),
                    (
                        re(r#"(?i)\bdevice['"]?\s*[:=]\s*['"]?cpu\b"#),
                        "a device of cpu (the run was on the CPU)",
                    ),
                    (re(r"NVIDIA-SMI \d"), "the nvidia-smi banner"),
                ]
            });
            pats.iter().find(|(r, _)| r.is_match(line)).map(|(_, w)| *w)
        }
    }
}

/// How much of a log [`first_evidence`] reads: the Torch-SDAA banner and the launch line are
/// printed when the run starts (one banner a rank), so the head of a log holds them; a bound
/// keeps a multi-gigabyte log from being read twice.
pub const EVIDENCE_HEAD: u64 = 8 << 20;

/// The first line in the first [`EVIDENCE_HEAD`] bytes of the log at `path` that shows it ran
/// on another device than `dev`: its number (from 1) and what it shows. `None` when there is
/// none or the file cannot be read (the log's reader reports that).
pub fn first_evidence(path: &Path, dev: Device) -> Option<(usize, &'static str)> {
    let file = model_config::files::open_regular(path).ok()?;
    let mut reader = BufReader::new(file.take(EVIDENCE_HEAD));
    let mut line = Vec::new();
    let mut no = 0;
    loop {
        line.clear();
        // A line is read whole only up to the head's bound: `take` ends it there.
        match reader.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => return None,
            Ok(_) => no += 1,
        }
        if let Some(what) = wrong_device_evidence(dev, &String::from_utf8_lossy(&line)) {
            return Some((no, what));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_names() {
        assert_eq!(device_of("cuda.log"), Some(Device::Cuda));
        assert_eq!(device_of("sdaa_loss.log"), Some(Device::Sdaa));
        assert_eq!(device_of("gpu0.log"), Some(Device::Cuda));
        assert_eq!(device_of("train.log"), None);
        assert_eq!(device_of("cuda_vs_sdaa.log"), None);
        // The build-in models' camel-case names (issue #41).
        assert_eq!(device_of("rexnetCifar100Cuda.log"), Some(Device::Cuda));
        assert_eq!(device_of("selectslsSdaa.log"), Some(Device::Sdaa));
        assert_eq!(device_of("trainGPU.log"), Some(Device::Cuda));
        assert_eq!(device_of("SDAA.log"), Some(Device::Sdaa));
        assert_eq!(device_of("rexnetcifar100cuda.log"), None);
    }

    #[test]
    fn evidence_is_found_in_a_logs_head_with_its_line() {
        let t = tempfile::tempdir().unwrap();
        let log = t.path().join("cuda.log");
        let banner = "--------------+------------------\n Torch-SDAA   | 2.1.1b0+gitebfa9da\n";
        std::fs::write(&log, format!("launch\n{banner}step 0 loss 2.5\n")).unwrap();
        assert_eq!(
            first_evidence(&log, Device::Cuda),
            Some((3, "the Torch-SDAA banner"))
        );
        // The same text is no evidence against an SDAA log, nor is a CUDA run's output.
        assert_eq!(first_evidence(&log, Device::Sdaa), None);
        std::fs::write(&log, "python train.py --device cuda\nstep 0 loss 2.5\n").unwrap();
        assert_eq!(first_evidence(&log, Device::Cuda), None);
        assert_eq!(
            first_evidence(&log, Device::Sdaa),
            Some((1, "`--device cuda|cpu`"))
        );
        assert_eq!(
            first_evidence(&t.path().join("absent.log"), Device::Cuda),
            None
        );
    }
}
