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
        "train.py",
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

    // Every ModelZoo standard argument is documented and parsed — not the kit's own, which a
    // plain argparse training script would reject — and the launcher builds the command.
    let readme = std::fs::read_to_string(dir.join("run_scripts/README.md")).unwrap();
    let argument = std::fs::read_to_string(dir.join("run_scripts/argument.py")).unwrap();
    for a in &run_scripts_template::ArgSpec::standard().args {
        let flag = format!("`--{}`", a.name);
        assert_eq!(readme.contains(&flag), !a.kit_only, "{flag} in the README");
        assert_eq!(
            argument.contains(&format!("\"--{}\"", a.name)),
            !a.kit_only,
            "--{} in argument.py",
            a.name
        );
    }
    let launch = |args: &[&str]| {
        let out = Command::new(modelzoo_testkit::venv_python())
            .current_dir(dir.join("run_scripts"))
            .arg("run_vit_tiny.py")
            .args(args)
            .output()
            .unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    // The ModelZoo check's own form: `--nnodes`, a valued `--autocast True`.
    let (ok, stdout, stderr) = launch(&[
        "--print_cmd",
        "--step",
        "5",
        "--device",
        "sdaa",
        "--autocast",
        "True",
        "--nnodes",
        "1",
        "--nproc_per_node",
        "4",
    ]);
    assert!(ok, "{stdout}{stderr}");
    // In the model directory, whatever directory the launcher was started in.
    assert!(
        stdout.starts_with(&format!(
            "cd {} && torchrun \\\n    --nproc_per_node 4",
            dir.display()
        )),
        "{stdout}"
    );
    for want in ["train.py", "--step 5", "--device sdaa", "--autocast"] {
        assert!(stdout.contains(want), "{want}: {stdout}");
    }
    // Not given, so not passed: train.py's own defaults stand (issue #37).
    for absent in ["--print_cmd", "--batch_size", "--lr", "--epoch", "--seed"] {
        assert!(!stdout.contains(absent), "{absent}: {stdout}");
    }
    // A kit-only flag is no argument of a Python model.
    let (ok, _, stderr) = launch(&["--print_cmd", "--dump_step", "2"]);
    assert!(!ok && stderr.contains("--dump_step"), "{stderr}");
}

/// A fresh Python scaffold passes the PR functional check before the porter puts their model
/// in: its train.py trains on synthetic data, logging with tcap_dllogger — on the CPU and on
/// the SDAA emulator.
#[test]
fn a_fresh_python_scaffold_passes_modelzoo_ci_on_the_cpu_and_the_emulator() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let (code, _, stderr) =
        modelzoo(&["new", "MobileNet_V2", "--kind", "python", "--root", s(root)]);
    assert_eq!(code, 0, "{stderr}");
    let dir = root.join("Classification/MobileNet_V2");
    for readme in ["README.md", "run_scripts/README.md"] {
        let text = std::fs::read_to_string(dir.join(readme)).unwrap();
        std::fs::write(dir.join(readme), text.replace("TODO", "written")).unwrap();
    }
    let yaml = root.join("model_config/model.yaml");
    for device in ["cpu", "sdaa"] {
        let (code, stdout, stderr) = modelzoo(&[
            "ci",
            "--model-yaml",
            s(&yaml),
            "--device",
            device,
            "--work-dir",
            s(&root.join(format!("work-{device}"))),
        ]);
        assert_eq!(code, 0, "{device}: {stdout}{stderr}");
        assert!(stdout.contains("mobilenet_v2"), "{stdout}");
        if device == "sdaa" {
            assert!(stdout.contains("EMULATOR"), "{stdout}");
        }
    }
}

/// `modelzoo new --train-script`: the ModelZoo files around a training script a port
/// produced; nothing of the directory is overwritten, and the launcher passes on only the
/// standard arguments the script declares.
#[test]
fn a_migrated_training_script_is_adopted_without_overwriting_anything() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let dir = root.join("PyTorch/contrib/Classification/Net");
    std::fs::create_dir_all(&dir).unwrap();
    let script = "import argparse, os\np = argparse.ArgumentParser()\np.add_argument('--epochs', type=int, default=1)\np.add_argument('--batch-size', type=int, default=8)\np.add_argument('--lr', type=float, default=0.01)\np.add_argument('--seed', type=int, default=7)\np.add_argument('--output_dir', default='./output')\np.add_argument('--device', default='sdaa')\na = p.parse_args()\nprint('args', vars(a))\nprint('cwd', os.getcwd())\nprint('data', os.path.isfile('data/x.txt'))\n";
    std::fs::write(dir.join("main.py"), script).unwrap();
    std::fs::write(dir.join("README.md"), "the porter's own README\n").unwrap();
    let (code, stdout, stderr) = modelzoo(&[
        "new",
        "Net",
        "--kind",
        "python",
        "--root",
        s(root),
        "--dir",
        "PyTorch/contrib/Classification/Net",
        "--train-script",
        "main.py",
    ]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(stdout.contains("kept "), "{stdout}");
    assert_eq!(
        std::fs::read_to_string(dir.join("main.py")).unwrap(),
        script
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("README.md")).unwrap(),
        "the porter's own README\n"
    );
    assert!(!dir.join("train.py").exists());
    assert!(dir.join("run_scripts/run_net.py").is_file());
    // The script's own relative data, as it found it when `modelzoo port` ran it here.
    std::fs::create_dir_all(dir.join("data")).unwrap();
    std::fs::write(dir.join("data/x.txt"), "x").unwrap();
    let run = |cwd: &Path, launcher: &str, args: &[&str]| {
        let out = Command::new(modelzoo_testkit::venv_python())
            .current_dir(cwd)
            .arg(launcher)
            .args(args)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "{text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        text
    };
    let model_dir = dir.canonicalize().unwrap();
    let text = run(
        &dir.join("run_scripts"),
        "run_net.py",
        &[
            "--epoch",
            "3",
            "--batch_size",
            "4",
            "--step",
            "2",
            "--output_dir",
            "out",
        ],
    );
    // Its own flag names; --step, which it does not declare, is not passed on.
    assert!(
        text.contains("'epochs': 3") && text.contains("'batch_size': 4"),
        "{text}"
    );
    assert!(!text.contains("--step"), "{text}");
    // Issue #37: what was not given is not passed — the script's own defaults stand, not
    // argument.py's (`--lr 0.1 --seed 42`).
    assert!(
        text.contains("'lr': 0.01") && text.contains("'seed': 7"),
        "{text}"
    );
    // It runs in the model directory, as under `modelzoo port`: `data/` is found; a relative
    // --output_dir is from where the launcher was started.
    assert!(
        text.contains(&format!("cwd {}", model_dir.display())) && text.contains("data True"),
        "{text}"
    );
    let out_dir = model_dir.join("run_scripts/out");
    assert!(
        text.contains(&format!("'output_dir': '{}'", out_dir.display())),
        "{text}"
    );
    // The same from the model directory, the way the model.yaml entry and the ModelZoo's check
    // start it, and a value given is passed on.
    let text = run(&dir, "run_scripts/run_net.py", &["--lr", "0.5"]);
    assert!(
        text.contains("'lr': 0.5")
            && text.contains(&format!("cwd {}", model_dir.display()))
            && text.contains("data True"),
        "{text}"
    );
    // An adopted script that is not there is a clear error.
    let (code, _, stderr) = modelzoo(&[
        "new",
        "Other",
        "--kind",
        "python",
        "--root",
        s(root),
        "--train-script",
        "missing.py",
    ]);
    assert_eq!(code, 2);
    assert!(stderr.contains("--train-script missing.py"), "{stderr}");
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
