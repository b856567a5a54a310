//! `modelzoo env`'s banner has torch_sdaa's layout: checked against the repo's own fixture
//! (tests/fixtures/torch_sdaa_banner.txt, written in that layout) and, when present, the real
//! banner in ../shared/fixtures/tecorigin-modelzoo/demo/sdaa.log.

use std::path::{Path, PathBuf};

use device_sdaa::report::LibraryRow;
use device_sdaa::EnvReport;

fn row(name: &str, version: &str, file: &str) -> LibraryRow {
    LibraryRow {
        name: name.into(),
        version: Some(version.into()),
        path: Some(PathBuf::from("/opt/tecoai/lib64").join(file)),
    }
}

fn report() -> EnvReport {
    EnvReport {
        host_ip: Some("127.0.1.1".into()),
        pytorch: LibraryRow {
            name: "PyTorch".into(),
            version: Some("2.4.0".into()),
            path: None,
        },
        torch_sdaa: LibraryRow {
            name: "Torch-SDAA".into(),
            version: Some("2.1.1".into()),
            path: None,
        },
        sdaa_driver: Some("2.1.1".into()),
        sdaa_libraries: vec![
            row("SDAA Runtime", "2.1.0b0", "libsdaart.so"),
            row("SDPTI", "1.4.0b0", "libsdpti.so"),
            row("TecoDNN", "2.1.0b0", "libtecodnn.so"),
            row("TecoBLAS", "2.1.0b2", "libtecoblas.so"),
            row("CustomDNN", "1.20.0a0", "libtecodnn_ext.so"),
            row("TecoRAND", "2.0.1", "libtecorand.so"),
            LibraryRow {
                name: "TCCL".into(),
                version: None,
                path: None,
            },
        ],
        sdaa_device_count: Some(4),
        sdaa_error: None,
        sdaa_search_dirs: vec![],
        sdaa_is_emulator: false,
        cpu_model: Some("Test CPU".into()),
        cpu_threads: 8,
        cuda_driver: None,
        cuda_devices: vec![],
        libtorch_cuda: None,
        cuda_error: None,
    }
}

/// The banner block of a log: from the first separator to the third.
fn banner(text: &str) -> Vec<String> {
    let lines: Vec<&str> = text.lines().collect();
    let start = lines
        .iter()
        .position(|l| l.starts_with("--------------+"))
        .expect("a banner");
    let mut seps = 0;
    let mut out = Vec::new();
    for l in &lines[start..] {
        out.push(l.trim_end().to_string());
        if l.starts_with("--------------+") {
            seps += 1;
            if seps == 3 {
                break;
            }
        }
    }
    out
}

fn assert_same_layout(ours: &[String], theirs: &[String], what: &str) {
    assert_eq!(
        ours.len(),
        theirs.len(),
        "{what}: row count\n{ours:#?}\n{theirs:#?}"
    );
    for (a, b) in ours.iter().zip(theirs) {
        if b.starts_with("--------------+") {
            assert_eq!(a, b, "{what}: separator");
        } else {
            // Same label in the same 14-character column, then "| ".
            assert_eq!(a.get(..16), b.get(..16), "{what}: {a:?} vs {b:?}");
        }
    }
}

#[test]
fn banner_matches_the_repo_fixture_exactly() {
    let text = report().to_string();
    let ours = banner(&text);
    let fixture = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/torch_sdaa_banner.txt"),
    )
    .unwrap();
    assert_eq!(ours, banner(&fixture));
    assert!(text.contains(" TCCL         | N/A\n"));
    assert!(text.contains(" SDAA Devices | 4\n"));
}

#[test]
fn banner_has_the_layout_of_the_real_torch_sdaa_banner() {
    let real = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/fixtures/tecorigin-modelzoo/demo/sdaa.log");
    let Ok(text) = std::fs::read_to_string(&real) else {
        println!("skipping: {} not present", real.display());
        return;
    };
    assert_same_layout(
        &banner(&report().to_string()),
        &banner(&text),
        "sdaa.log banner",
    );
}
