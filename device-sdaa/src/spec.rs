//! Parsing of the `--device` argument.

use std::fmt;
use std::str::FromStr;

/// Which backend a device belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DeviceKind {
    /// The host CPU through libtorch_cpu.
    Cpu,
    /// An NVIDIA GPU through libtorch_cuda, loaded on demand.
    Cuda,
    /// A Tecorigin SDAA card through the vendor's torch plugin (PrivateUse1 device `sdaa`).
    Sdaa,
}

impl DeviceKind {
    /// The name used on the command line and by PyTorch (`cpu`, `cuda`, `sdaa`).
    pub fn as_str(self) -> &'static str {
        match self {
            DeviceKind::Cpu => "cpu",
            DeviceKind::Cuda => "cuda",
            DeviceKind::Sdaa => "sdaa",
        }
    }
}

/// A parsed `--device` value: backend plus optional ordinal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DeviceSpec {
    pub kind: DeviceKind,
    /// `None` for a bare `cuda`/`sdaa` (device 0, or `LOCAL_RANK` under a launcher).
    pub index: Option<usize>,
}

/// Error for a `--device` value that is not one of the accepted forms.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid device {input:?}: expected one of cpu, cuda, cuda:N, sdaa, sdaa:N (N = device ordinal, e.g. sdaa:0)")]
pub struct ParseDeviceError {
    pub input: String,
}

impl DeviceSpec {
    pub const CPU: DeviceSpec = DeviceSpec {
        kind: DeviceKind::Cpu,
        index: None,
    };

    /// The ordinal to use: the explicit one, else 0.
    pub fn ordinal(&self) -> usize {
        self.index.unwrap_or(0)
    }
}

impl FromStr for DeviceSpec {
    type Err = ParseDeviceError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = || ParseDeviceError {
            input: s.to_string(),
        };
        let lower = s.trim().to_ascii_lowercase();
        let (name, index) = match lower.split_once(':') {
            Some((name, idx)) => {
                let idx = idx.trim();
                if idx.is_empty() || !idx.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(err());
                }
                (name.trim(), Some(idx.parse::<usize>().map_err(|_| err())?))
            }
            None => (lower.as_str(), None),
        };
        let kind = match name {
            "cpu" if index.is_none() => DeviceKind::Cpu,
            "cuda" => DeviceKind::Cuda,
            "sdaa" => DeviceKind::Sdaa,
            _ => return Err(err()),
        };
        Ok(DeviceSpec { kind, index })
    }
}

impl fmt::Display for DeviceSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.index {
            Some(i) => write!(f, "{}:{}", self.kind.as_str(), i),
            None => f.write_str(self.kind.as_str()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_accepted_forms() {
        assert_eq!("cpu".parse::<DeviceSpec>().unwrap(), DeviceSpec::CPU);
        assert_eq!(
            " CUDA:3 ".parse::<DeviceSpec>().unwrap(),
            DeviceSpec {
                kind: DeviceKind::Cuda,
                index: Some(3)
            }
        );
        assert_eq!(
            "Sdaa".parse::<DeviceSpec>().unwrap(),
            DeviceSpec {
                kind: DeviceKind::Sdaa,
                index: None
            }
        );
        assert_eq!(
            "sdaa:0".parse::<DeviceSpec>().unwrap().to_string(),
            "sdaa:0"
        );
    }

    #[test]
    fn rejects_everything_else_listing_accepted_forms() {
        for bad in [
            "", "gpu", "cuda:", "cuda:-1", "cuda:x", "cpu:0", "mlu", "sdaa:1:2", "cuda 0",
        ] {
            let e = bad.parse::<DeviceSpec>().unwrap_err();
            assert!(
                e.to_string().contains("cpu, cuda, cuda:N, sdaa, sdaa:N"),
                "{bad}: {e}"
            );
        }
    }
}
