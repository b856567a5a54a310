//! Where the kit's own files are: the repository a `modelzoo` binary was built in, with the
//! Python environment `make setup` made (`.venv`, torch 2.11) and the SDAA emulator `make build`
//! built (`target/sdaa-emulator`, with its `torch_sdaa` Python package). Tools that run a
//! user's Python (`modelzoo ci`, `modelzoo port`) use them so a Python model runs with the
//! kit's torch and, without a card, on the emulator.

use std::path::{Path, PathBuf};

/// The environment variable naming the kit's root, for a binary run from elsewhere.
pub const KIT_ROOT_ENV: &str = "MODELZOO_ROOT";

/// The kit's root and what it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kit {
    pub root: PathBuf,
}

impl Kit {
    /// `$MODELZOO_ROOT`, else the repository the running binary lives in
    /// (`<root>/target/<profile>/modelzoo`), else None.
    pub fn locate() -> Option<Kit> {
        if let Some(root) = std::env::var_os(KIT_ROOT_ENV) {
            return Some(Kit {
                root: PathBuf::from(root),
            });
        }
        let exe = std::env::current_exe().ok()?.canonicalize().ok()?;
        exe.ancestors()
            .skip(1)
            .find(|dir| Kit::looks_like_root(dir))
            .map(|root| Kit {
                root: root.to_path_buf(),
            })
    }

    fn looks_like_root(dir: &Path) -> bool {
        dir.join("Cargo.toml").is_file() && dir.join("target").is_dir()
    }

    /// `.venv/bin` when it holds a python: put first on PATH, `python` is the kit's.
    pub fn venv_bin(&self) -> Option<PathBuf> {
        let bin = self.root.join(".venv/bin");
        bin.join("python").is_file().then_some(bin)
    }

    /// The directory holding the emulator's `torch_sdaa` package and the `tcap_dllogger`
    /// stand-in (`target/sdaa-emulator/python`), when built.
    pub fn emulator_python(&self) -> Option<PathBuf> {
        let dir = self.root.join("target/sdaa-emulator/python");
        dir.join("torch_sdaa/__init__.py").is_file().then_some(dir)
    }
}

/// `paths` joined for PYTHONPATH, after what the environment already has.
pub fn python_path_with(first: &[PathBuf], last: &[PathBuf]) -> Option<std::ffi::OsString> {
    let mut all: Vec<PathBuf> = first.to_vec();
    if let Some(old) = std::env::var_os("PYTHONPATH") {
        all.extend(std::env::split_paths(&old));
    }
    all.extend(last.iter().cloned());
    if all.is_empty() {
        return None;
    }
    std::env::join_paths(all).ok()
}
