//! `modelzoo new` end to end: fresh output is in the shape the real `modelzoo validate` wants
//! (only its TODO placeholders are reported), the generated Python launcher runs, nothing is
//! ever overwritten.

use std::path::Path;
use std::process::Command;

fn modelzoo(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_modelzoo"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// `modelzoo validate` on a fresh scaffold reports exactly its README placeholders; with them
/// written (as an adapter would), the directory is clean.
fn validate_reports_only_placeholders(dir: &Path, readmes: &[&str]) {
    let (code, out, err) = modelzoo(&["validate", s(dir)]);
    assert_eq!(code, 1, "validate: {out}{err}");
    let findings: Vec<&str> = out.lines().filter(|l| !l.starts_with("checked ")).collect();
    assert_eq!(findings.len(), readmes.len(), "{out}");
    for (line, readme) in findings.iter().zip(readmes) {
        let prefix = format!("{}: readme.placeholders: ", dir.join(readme).display());
        assert!(line.starts_with(&prefix), "{out}");
        assert!(line.contains("TODO"), "{out}");
    }
    for readme in readmes {
        let path = dir.join(readme);
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, text.replace("TODO", "written")).unwrap();
    }
    let (code, out, err) = modelzoo(&["validate", s(dir)]);
    assert_eq!(code, 0, "validate: {out}{err}");
}

#[test]
fn python_scaffold_is_in_shape_and_its_launcher_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let (code, stdout, stderr) = modelzoo(&[
        "new",
        "vit_tiny",
        "--kind",
        "python",
        "--category",
        "Classification",
        "--root",
        s(root),
    ]);
    assert_eq!(code, 0, "{stderr}");
    let dir = root.join("Classification/vit_tiny");
    for rel in [
        "README.md",
        "requirements.txt",
        "run_scripts/README.md",
        "run_scripts/argument.py",
        "run_scripts/formate_cmd.py",
        "run_scripts/run_vit_tiny.py",
    ] {
        assert!(dir.join(rel).is_file(), "{rel} missing; {stdout}");
        assert!(
            stdout.contains(&format!("created {}", dir.join(rel).display())),
            "{stdout}"
        );
    }
    let yaml = std::fs::read_to_string(root.join("model_config/model.yaml")).unwrap();
    assert!(yaml.contains("name: vit_tiny") && yaml.contains("path: Classification/vit_tiny"));
    let index = model_config::ModelYaml::load(&root.join("model_config/model.yaml")).unwrap();
    assert_eq!(
        index.model_dir(index.get("vit_tiny").unwrap()),
        root.join("Classification/vit_tiny")
    );

    // The real validator finds nothing but the placeholders left for the adapter.
    validate_reports_only_placeholders(&dir, &["README.md", "run_scripts/README.md"]);

    // Every standard argument is documented and parsed; the launcher builds the command.
    let readme = std::fs::read_to_string(dir.join("run_scripts/README.md")).unwrap();
    for a in &run_scripts_template::ArgSpec::standard().args {
        assert!(
            readme.contains(&format!("`--{}`", a.name)),
            "{} undocumented",
            a.name
        );
    }
    let py = Command::new("python3")
        .current_dir(dir.join("run_scripts"))
        .args([
            "run_vit_tiny.py",
            "--print_cmd",
            "--step",
            "5",
            "--device",
            "sdaa",
            "--autocast",
            "-o",
            "Engine.max_steps=5",
            "--nproc_per_node",
            "4",
        ])
        .output();
    match py {
        Ok(out) => {
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert!(
                out.status.success(),
                "{stdout}{}",
                String::from_utf8_lossy(&out.stderr)
            );
            assert!(
                stdout.starts_with("torchrun \\\n    --nproc_per_node 4"),
                "{stdout}"
            );
            for want in [
                "--step 5",
                "--device sdaa",
                "--autocast",
                "--override Engine.max_steps=5",
                "--batch_size 32",
            ] {
                assert!(stdout.contains(want), "{want}: {stdout}");
            }
            assert!(!stdout.contains("--print_cmd"), "{stdout}");
        }
        Err(e) => eprintln!("python3 not available ({e}); skipping the launcher run"),
    }
}

#[test]
fn rust_scaffold_is_in_shape() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let (code, stdout, stderr) = modelzoo(&["new", "unet", "--kind", "rust", "--root", s(root)]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("[workspace] members"), "{stdout}");
    let dir = root.join("modelzoo/unet");
    let cargo = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
    assert!(cargo.contains("name = \"run_unet\""), "{cargo}");
    // The generated spec merges with the standard one.
    let extras = run_scripts_template::ArgSpec::from_file(&dir.join("spec.yaml")).unwrap();
    run_scripts_template::ArgSpec::standard()
        .merged(&extras, "spec.yaml")
        .unwrap();
    validate_reports_only_placeholders(&dir, &["README.md"]);
}

#[test]
fn dry_run_writes_nothing_and_existing_files_are_never_overwritten() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let (code, stdout, _) = modelzoo(&[
        "new",
        "bert",
        "--kind",
        "python",
        "--category",
        "NLP",
        "--root",
        s(root),
        "--dry-run",
    ]);
    assert_eq!(code, 0);
    assert!(stdout.contains("would create"), "{stdout}");
    assert!(stdout.contains("would add entry `bert`"), "{stdout}");
    assert!(!root.join("NLP").exists());
    assert!(!root.join("model_config").exists());

    let dir = root.join("NLP/bert");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("README.md"), "mine\n").unwrap();
    let (code, _, stderr) = modelzoo(&[
        "new",
        "bert",
        "--kind",
        "python",
        "--category",
        "NLP",
        "--root",
        s(root),
    ]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains("refusing to overwrite") && stderr.contains("README.md"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("README.md")).unwrap(),
        "mine\n"
    );
    assert!(
        !dir.join("run_scripts").exists(),
        "nothing written on refusal"
    );

    // Same name twice in model.yaml is refused too.
    let (code, _, stderr) = modelzoo(&["new", "gpt2", "--kind", "rust", "--root", s(root)]);
    assert_eq!(code, 0, "{stderr}");
    std::fs::remove_dir_all(root.join("modelzoo/gpt2")).unwrap();
    let (code, _, stderr) = modelzoo(&["new", "gpt2", "--kind", "rust", "--root", s(root)]);
    assert_eq!(code, 2);
    assert!(stderr.contains("already has an entry"), "{stderr}");

    let (code, _, stderr) = modelzoo(&["new", "Bad-Name", "--kind", "rust", "--root", s(root)]);
    assert_eq!(code, 2);
    assert!(stderr.contains("invalid model name"), "{stderr}");
}
