//! FlagPerf's case key: `model:framework:hardwareID:nnodes:nproc:repeat`.

use std::fmt;
use std::str::FromStr;

use crate::BenchError;

/// One entry of a test_conf: which case, on what, how many times.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaseKey {
    pub model: String,
    pub framework: String,
    pub hardware: String,
    pub nnodes: usize,
    pub nproc: usize,
    pub repeat: usize,
}

impl CaseKey {
    /// Processes in the job.
    pub fn world_size(&self) -> usize {
        self.nnodes * self.nproc
    }

    /// The case without its repeat count (`resnet:rust-tch:cpu:1x2`): what results group by.
    pub fn case_name(&self) -> String {
        format!(
            "{}:{}:{}:{}x{}",
            self.model, self.framework, self.hardware, self.nnodes, self.nproc
        )
    }

    /// A folder name for the case in the work dir (`resnet-rust-tch-cpu-1x2`).
    pub fn dir_name(&self) -> String {
        format!(
            "{}-{}-{}-{}x{}",
            self.model, self.framework, self.hardware, self.nnodes, self.nproc
        )
    }
}

impl fmt::Display for CaseKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}:{}:{}:{}:{}",
            self.model, self.framework, self.hardware, self.nnodes, self.nproc, self.repeat
        )
    }
}

impl FromStr for CaseKey {
    type Err = BenchError;

    fn from_str(key: &str) -> Result<CaseKey, BenchError> {
        let bad = |why: String| BenchError::Key {
            key: key.to_string(),
            why,
        };
        let parts: Vec<&str> = key.trim().split(':').collect();
        if parts.len() != 6 {
            return Err(bad(format!(
                "{} field(s); a key has 6: model:framework:hardware:nnodes:nproc:repeat, e.g. resnet:rust-tch:cpu:1:2:3",
                parts.len()
            )));
        }
        for (name, value) in ["model", "framework", "hardware"].iter().zip(&parts) {
            let ok = !value.is_empty()
                && value
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
            if !ok {
                return Err(bad(format!(
                    "{name} `{value}` must be a non-empty name of letters, digits, `-`, `_`, `.`"
                )));
            }
        }
        let count = |name: &str, value: &str| -> Result<usize, BenchError> {
            match value.parse::<i64>() {
                Ok(n) if n > 0 => Ok(n as usize),
                Ok(n) => Err(bad(format!("{name} {n}: must be a positive integer"))),
                Err(_) => Err(bad(format!("{name} `{value}` is not an integer"))),
            }
        };
        Ok(CaseKey {
            model: parts[0].to_string(),
            framework: parts[1].to_string(),
            hardware: parts[2].to_string(),
            nnodes: count("nnodes", parts[3])?,
            nproc: count("nproc", parts[4])?,
            repeat: count("repeat", parts[5])?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_round_trip_and_bad_ones_say_which_field() {
        let k: CaseKey = "resnet:rust-tch:cpu:1:2:3".parse().unwrap();
        assert_eq!((k.nnodes, k.nproc, k.repeat, k.world_size()), (1, 2, 3, 2));
        assert_eq!(k.to_string(), "resnet:rust-tch:cpu:1:2:3");
        assert_eq!(k.case_name(), "resnet:rust-tch:cpu:1x2");
        for (key, says) in [
            ("resnet:rust-tch:cpu:1:2", "5 field(s)"),
            ("resnet:rust-tch:cpu:1:0:1", "nproc 0: must be a positive"),
            ("resnet:rust-tch:cpu:1:-2:1", "nproc -2"),
            ("resnet:rust-tch:cpu:x:1:1", "nnodes `x` is not an integer"),
            ("resnet:rust-tch:cpu:1:1:0", "repeat 0"),
            (":rust-tch:cpu:1:1:1", "model ``"),
            ("res net:rust-tch:cpu:1:1:1", "model `res net`"),
        ] {
            let e = key.parse::<CaseKey>().unwrap_err().to_string();
            assert!(e.contains(says), "{key}: {e}");
        }
    }
}
