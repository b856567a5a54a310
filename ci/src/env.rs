//! What the commands run with: the kit's Python (its `.venv/bin` on PATH) and, where there is
//! no SDAA card, the kit's SDAA emulator — with every report saying so.
//!
//! The decision ([`SdaaBackend::detect`]) follows where device-sdaa and torch_sdaa look for the
//! vendor's software: an SDK is there when `/opt/tecoai/lib64/libsdaart.so` exists, or when
//! `$SDAA_HOME` / `$TECO_HOME` names a directory with `lib64/libsdaart.so` that is not the kit's
//! emulator. Then `--device sdaa` runs on the card, untouched. Otherwise, when the kit's
//! emulator is built (`target/sdaa-emulator/lib64/libsdaart.so`), it runs on the emulator:
//! `SDAA_HOME` points there (unless already set) for the Rust models, the emulator's Python
//! directory (its `torch_sdaa` and `tcap_dllogger` stand-in) is appended to PYTHONPATH for the
//! Python ones, and the device reads `sdaa (EMULATOR)` everywhere.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use modelzoo_support::kit::{python_path_with, Kit};
use modelzoo_support::process::prefixed_path;

/// The SDAA runtime library whose presence marks an SDK (a card's software).
const RUNTIME: &str = "lib64/libsdaart.so";

/// Where `--device sdaa` runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SdaaBackend {
    /// The vendor's SDAA software is installed (a card): commands run untouched.
    Card { sdk: PathBuf },
    /// No SDAA software, and the kit's emulator is built: commands run on the emulator.
    Emulator {
        /// `<kit>/target/sdaa-emulator` (what `SDAA_HOME` is set to).
        home: PathBuf,
        /// Its Python packages (`torch_sdaa`, `tcap_dllogger`), when built.
        python: Option<PathBuf>,
    },
    /// Neither: an `sdaa` command will fail with its own error.
    Missing,
}

impl SdaaBackend {
    /// Decides from this machine: the SDKs named by `$SDAA_HOME`, `$TECO_HOME` and
    /// `/opt/tecoai`, and the kit's emulator (see the module docs).
    pub fn detect(kit: Option<&Kit>) -> SdaaBackend {
        let mut sdks: Vec<PathBuf> = ["SDAA_HOME", "TECO_HOME"]
            .iter()
            .filter_map(std::env::var_os)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .collect();
        sdks.push(PathBuf::from("/opt/tecoai"));
        SdaaBackend::detect_with(kit, &sdks)
    }

    /// [`SdaaBackend::detect`] with the SDK directories to look at given (for tests).
    pub fn detect_with(kit: Option<&Kit>, sdks: &[PathBuf]) -> SdaaBackend {
        let emulator = kit.map(|k| k.root.join("target/sdaa-emulator"));
        let same = |a: &Path, b: &Path| {
            let canon = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
            canon(a) == canon(b)
        };
        let real = sdks.iter().find(|sdk| {
            sdk.join(RUNTIME).is_file() && !emulator.as_deref().is_some_and(|e| same(sdk, e))
        });
        if let Some(sdk) = real {
            return SdaaBackend::Card { sdk: sdk.clone() };
        }
        match emulator {
            Some(home) if home.join(RUNTIME).is_file() => SdaaBackend::Emulator {
                python: kit.and_then(Kit::emulator_python),
                home,
            },
            _ => SdaaBackend::Missing,
        }
    }

    /// One line for the console: where `sdaa` commands run.
    pub fn describe(&self) -> String {
        match self {
            SdaaBackend::Card { sdk } => format!("the SDAA software in {}", sdk.display()),
            SdaaBackend::Emulator { home, .. } => format!(
                "the SDAA EMULATOR in {} — no SDAA card here (no /opt/tecoai/{RUNTIME}, no \
                 $SDAA_HOME or $TECO_HOME naming an SDK); results are not SDAA hardware results",
                home.display()
            ),
            SdaaBackend::Missing => "nothing: no SDAA card (no /opt/tecoai/lib64/libsdaart.so, \
                 no $SDAA_HOME or $TECO_HOME naming an SDK) and no SDAA emulator built (run \
                 `make build`)"
                .into(),
        }
    }
}

/// The device as reports name it: `sdaa (EMULATOR)` when `sdaa` runs on the emulator, the
/// device itself otherwise.
pub fn device_label(device: &str, backend: &SdaaBackend) -> String {
    match backend {
        SdaaBackend::Emulator { .. } if device == "sdaa" => "sdaa (EMULATOR)".into(),
        _ => device.to_string(),
    }
}

/// The environment a command runs with: PATH = `prefix`, the kit's `.venv/bin`, then the
/// inherited PATH; PYTHONUNBUFFERED (the console keeps the order of what Python printed,
/// even when it is killed); without a card, the emulator's Python directory appended to
/// PYTHONPATH, and for `sdaa` on the emulator `SDAA_HOME` when it is not set.
pub fn command_env(
    device: &str,
    prefix: &[PathBuf],
    kit: Option<&Kit>,
    backend: &SdaaBackend,
) -> Vec<(&'static str, OsString)> {
    let mut env = vec![("PYTHONUNBUFFERED", OsString::from("1"))];
    let mut path: Vec<PathBuf> = prefix.to_vec();
    path.extend(kit.and_then(Kit::venv_bin));
    if let Some(p) = prefixed_path(&path) {
        env.push(("PATH", p));
    }
    if let SdaaBackend::Emulator { home, python } = backend {
        let python: Vec<PathBuf> = python.iter().cloned().collect();
        if let Some(pp) = python_path_with(&[], &python) {
            env.push(("PYTHONPATH", pp));
        }
        let unset = std::env::var_os("SDAA_HOME").is_none_or(|v| v.is_empty());
        if device == "sdaa" && unset {
            env.push(("SDAA_HOME", home.clone().into_os_string()));
        }
    }
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake_sdk(dir: &Path) {
        std::fs::create_dir_all(dir.join("lib64")).unwrap();
        std::fs::write(dir.join(RUNTIME), b"").unwrap();
    }

    #[test]
    fn a_card_wins_the_emulator_stands_in_otherwise() {
        let tmp = tempfile::tempdir().unwrap();
        let kit = Kit {
            root: tmp.path().join("kit"),
        };
        let emulator = kit.root.join("target/sdaa-emulator");
        let vendor = tmp.path().join("tecoai");
        assert_eq!(
            SdaaBackend::detect_with(Some(&kit), std::slice::from_ref(&vendor)),
            SdaaBackend::Missing
        );
        fake_sdk(&emulator);
        let on_emulator = SdaaBackend::detect_with(Some(&kit), std::slice::from_ref(&vendor));
        assert_eq!(
            on_emulator,
            SdaaBackend::Emulator {
                home: emulator.clone(),
                python: None
            }
        );
        assert_eq!(device_label("sdaa", &on_emulator), "sdaa (EMULATOR)");
        assert_eq!(device_label("cpu", &on_emulator), "cpu");
        // SDAA_HOME naming the emulator itself is not a card.
        assert!(matches!(
            SdaaBackend::detect_with(Some(&kit), &[emulator.clone(), vendor.clone()]),
            SdaaBackend::Emulator { .. }
        ));
        fake_sdk(&vendor);
        let card = SdaaBackend::detect_with(Some(&kit), &[emulator, vendor.clone()]);
        assert_eq!(card, SdaaBackend::Card { sdk: vendor });
        assert_eq!(device_label("sdaa", &card), "sdaa");
    }
}
