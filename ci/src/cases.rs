//! The public ModelZoo's cases, run the way its own functional check runs them: in
//! `<zoo root>/<run_dir>`, `python <run_file> --nnodes N --nproc_per_node N --batch_size …
//! --device <device> --autocast … --<other> <value>` as an argument vector (no shell), passing
//! when it exits 0 — and, here, when its console holds tcap_dllogger `train.loss` lines with
//! finite values. `python` is the kit's (its `.venv/bin` first on PATH); without a card,
//! `--device sdaa` runs on the kit's emulator ([`crate::env`]).

use std::process::Command;
use std::time::{Duration, Instant};

use model_config::zoo_cases::CaseKind;
use model_config::{ZooCase, ZooCases};
use modelzoo_support::process::RunOutcome;

use crate::{
    changed_dirs, check_console, log_stage, out_dir, pool, prepare_work_dir, run_job, run_stage,
    CiError, ModelResult, Options, Stage,
};

/// The interpreter a case runs with, looked up on the command's PATH (the kit's `.venv/bin`
/// first), as the ModelZoo's check calls it.
pub const PYTHON: &str = "python";

/// How long a case may run when not told (`modelzoo ci --timeout`): the file gives none.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(3600);

/// The cases to run: those named (`--models`, by case_name), those whose run_dir changed since
/// `rev` (`--changed-since`), or all.
pub fn select(
    cases: &ZooCases,
    names: Option<&[String]>,
    changed_since: Option<&str>,
) -> Result<Vec<ZooCase>, CiError> {
    if let Some(names) = names {
        return names
            .iter()
            .map(|name| {
                cases
                    .get(name)
                    .cloned()
                    .ok_or_else(|| CiError::UnknownModel {
                        what: "case",
                        name: name.clone(),
                        file: cases.file.display().to_string(),
                        valid: cases.cases.iter().map(|c| c.case_name.clone()).collect(),
                    })
            })
            .collect();
    }
    if let Some(rev) = changed_since {
        let root = cases.root.clone().unwrap_or_default();
        let dirs: Vec<&str> = cases.cases.iter().map(|c| c.run_dir.as_str()).collect();
        let changed = changed_dirs(&root, rev, &dirs)?;
        return Ok(cases
            .cases
            .iter()
            .zip(changed)
            .filter(|(_, c)| *c)
            .map(|(c, _)| c.clone())
            .collect());
    }
    Ok(cases.cases.clone())
}

/// Runs every selected case, `opts.jobs` at a time, each under `timeout` (its run and the
/// console check together); results in the order of `selected`. Refuses before anything runs
/// when a case's output directory holds files CI did not create.
pub fn run_all(
    cases: &ZooCases,
    selected: &[ZooCase],
    opts: &Options,
    timeout: Duration,
) -> Result<Vec<ModelResult>, CiError> {
    let dirs: Vec<_> = selected
        .iter()
        .map(|c| out_dir(opts, &c.case_name))
        .collect();
    prepare_work_dir(opts, &dirs)?;
    Ok(pool(
        selected.len(),
        opts,
        |i| check_case(cases, &selected[i], opts, timeout),
        |i| {
            let mut r = result(cases, &selected[i], opts);
            let skip = || Stage::Skip("not run: interrupted".into());
            (r.run, r.log) = (skip(), skip());
            r
        },
    ))
}

/// A result with nothing run yet: the layout stage is not part of a ModelZoo case.
fn result(cases: &ZooCases, case: &ZooCase, opts: &Options) -> ModelResult {
    let dir = cases.run_dir(case);
    let console = out_dir(opts, &case.case_name).join("console.log");
    ModelResult {
        name: case.case_name.clone(),
        device: opts.device_label(),
        layout: Stage::Omitted(
            "not part of the ModelZoo's case check (run `modelzoo validate` on the zoo)".into(),
        ),
        run: Stage::Skip("not run".into()),
        log: Stage::Skip("not run".into()),
        command: match case.kind {
            CaseKind::Training => display_command(&case.run_dir, &case.args(&opts.device)),
            CaseKind::Inference => display_stages(case),
        },
        console,
        dir,
        seconds: 0.0,
    }
}

/// Runs one case and reads its console.
pub fn check_case(
    cases: &ZooCases,
    case: &ZooCase,
    opts: &Options,
    timeout: Duration,
) -> ModelResult {
    let started = Instant::now();
    let deadline = started.checked_add(timeout);
    let mut r = result(cases, case, opts);
    if skip_inference(case, &mut r) {
        return r;
    }
    tracing::info!(case = %case.case_name, dir = %r.dir.display(), "running");
    let out = out_dir(opts, &case.case_name);
    if let Err(why) = crate::workdir::fresh(&out) {
        r.run = Stage::Fail(why);
        return r;
    }
    let mut command = Command::new(PYTHON);
    command
        .args(case.args(&opts.device))
        .current_dir(&r.dir)
        .envs(opts.command_env());
    let outcome = run_job(command, &r.console, deadline, opts);
    let secs = timeout.as_secs();
    r.run = match run_stage(&outcome, secs, &r.console, PYTHON) {
        Stage::Fail(m) if matches!(outcome, RunOutcome::SpawnFailed(_)) => Stage::Fail(format!(
            "{m} — the case runs `python` from PATH: run `make setup` for the kit's .venv, or put a python with torch on PATH"
        )),
        stage => stage,
    };
    r.log = if outcome == RunOutcome::Interrupted {
        Stage::Skip("not checked: interrupted".into())
    } else if outcome == RunOutcome::TimedOut {
        Stage::Skip("not checked: the run used up the case's timeout".into())
    } else if matches!(outcome, RunOutcome::SpawnFailed(_)) {
        Stage::Skip("not run".into())
    } else {
        log_stage(deadline, secs, &r.console.clone(), check_console)
    };
    r.seconds = started.elapsed().as_secs_f64();
    r
}

/// Why a TecoInference case is listed but not run: its stages export ONNX and run it through
/// the TecoInference engine, which neither the kit nor its emulator provides.
pub const INFERENCE_NOT_RUN: &str = "not run: a TecoInference case (ONNX export, then inference through the TecoInference engine, which this kit and its SDAA emulator do not provide); `modelzoo validate` checks its case file and its flags against the scripts' parsers";

/// Marks `r` not run when `case` is a TecoInference case ([`INFERENCE_NOT_RUN`]); whether it
/// did.
fn skip_inference(case: &ZooCase, r: &mut ModelResult) -> bool {
    if case.kind != CaseKind::Inference {
        return false;
    }
    r.run = Stage::Skip(INFERENCE_NOT_RUN.into());
    r.log = Stage::Skip("not run".into());
    true
}

/// An inference case's stages as one line typed from the zoo root:
/// `cd <run_dir> && python <export> … && python <example> …`.
fn display_stages(case: &ZooCase) -> String {
    let mut line = format!("cd {}", quote(&case.run_dir));
    for inv in &case.invocations {
        line.push_str(" && ");
        line.push_str(PYTHON);
        for a in inv.args() {
            line.push(' ');
            line.push_str(&quote(&a));
        }
    }
    line
}

/// The command as a person would type it from the zoo root (for the reports).
fn display_command(run_dir: &str, args: &[String]) -> String {
    let mut line = format!("cd {} && {PYTHON}", quote(run_dir));
    for a in args {
        line.push(' ');
        line.push_str(&quote(a));
    }
    line
}

/// Single-quotes `s` for `sh` unless it is plainly safe.
fn quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+:,@=".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue #41: a TecoInference case is loaded (no longer refused), shown with every stage
    /// it would run, and reported not run with the reason instead of being run as a training
    /// script.
    #[test]
    fn an_inference_case_is_listed_with_its_stages_and_not_run() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("TecoInference/contrib/detection/tinydet");
        std::fs::create_dir_all(&dir).unwrap();
        for f in ["export_onnx.py", "example_valid.py"] {
            std::fs::write(dir.join(f), "print('hi')\n").unwrap();
        }
        let file = tmp
            .path()
            .join(model_config::zoo_cases::INFERENCE_FILE_IN_ZOO);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(
            &file,
            "- case_name: octocat\n  run_dir: TecoInference/contrib/detection/tinydet\n  run_export:\n    run_file: export_onnx.py\n  run_example_valid:\n    run_file: example_valid.py\n    params: {ckpt: m.onnx, batch_size: 2, data_path: /d v, target: sdaa, dtype: float16}\n",
        )
        .unwrap();
        let cases = ZooCases::load(&file).unwrap_or_else(|e| panic!("{e}"));
        let case = &cases.cases[0];
        assert_eq!(
            display_stages(case),
            "cd TecoInference/contrib/detection/tinydet && python export_onnx.py && python \
             example_valid.py --ckpt m.onnx --batch_size 2 --data_path '/d v' --target sdaa \
             --dtype float16"
        );
        let mut r = ModelResult {
            name: case.case_name.clone(),
            device: "sdaa".into(),
            layout: Stage::Skip(String::new()),
            run: Stage::Skip("not run".into()),
            log: Stage::Skip("not run".into()),
            command: String::new(),
            console: tmp.path().join("console.log"),
            dir: cases.run_dir(case),
            seconds: 0.0,
        };
        assert!(skip_inference(case, &mut r));
        assert!(
            matches!(&r.run, Stage::Skip(why) if why.contains("TecoInference engine")),
            "{:?}",
            r.run
        );
        let mut training = case.clone();
        training.kind = CaseKind::Training;
        let mut r2 = r.clone();
        r2.run = Stage::Skip("not run".into());
        assert!(!skip_inference(&training, &mut r2));
        assert!(matches!(&r2.run, Stage::Skip(why) if why == "not run"));
    }

    #[test]
    fn the_displayed_command_quotes_what_needs_it() {
        assert_eq!(
            display_command(
                "PyTorch/contrib/A B",
                &["run_scripts/r.py".into(), "--tag".into(), "it's".into()]
            ),
            "cd 'PyTorch/contrib/A B' && python run_scripts/r.py --tag 'it'\\''s'"
        );
    }
}
