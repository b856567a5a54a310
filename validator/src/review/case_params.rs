//! args.case-params: a ModelZoo case file's params are options its run file's own parser
//! accepts. The ModelZoo's check runs a case as `python <run_file> --<param> <value> …` (every
//! standard parameter, then `others`; a TecoInference stage likewise), so a parameter the
//! script's argparse parser does not define — `--nnodes` where argument.py defines `--nnode` —
//! stops the run with "unrecognized arguments": a certain failure, an error. The parser is read
//! statically ([`super::argparse`]); when it cannot be, nothing is said.

use std::path::Path;

use model_config::zoo_cases::{Flag, Invocation, ZooCase, ZooCases, REQUIRED_PARAMS};

use super::argparse::{self, Accepts, Parser};
use crate::finding::Finding;

/// The most defined options a message lists when none is close to the one passed.
const LISTED: usize = 12;

/// Every well-formed case of `cases` (read from `file`, named as given), each invocation's
/// flags against its run file's parser.
pub(crate) fn check(cases: &ZooCases, file: &Path, out: &mut Vec<Finding>) {
    for case in &cases.cases {
        let run_dir = cases.run_dir(case);
        for inv in &case.invocations {
            let Ok(parser) = argparse::read(&run_dir.join(&inv.run_file), &run_dir) else {
                continue;
            };
            for flag in &inv.flags {
                if let Some(message) = judge(case, inv, flag, &parser, &run_dir) {
                    out.push(Finding {
                        path: file.to_path_buf(),
                        line: Some(flag.line),
                        rule: "args.case-params",
                        message,
                    });
                }
            }
        }
    }
}

/// What is wrong with passing `flag` to the parser, if anything.
fn judge(
    case: &ZooCase,
    inv: &Invocation,
    flag: &Flag,
    parser: &Parser,
    run_dir: &Path,
) -> Option<String> {
    let option = format!("--{}", flag.name);
    let read_from = parser
        .files
        .iter()
        .map(|f| {
            let rel = std::fs::canonicalize(run_dir)
                .ok()
                .and_then(|d| f.strip_prefix(d).ok().map(Path::to_path_buf))
                .unwrap_or_else(|| f.clone());
            rel.display().to_string()
        })
        .collect::<Vec<_>>()
        .join(", ");
    let whose = match inv.stage {
        Some(stage) => format!("case `{}`, {stage}", case.case_name),
        None => format!("case `{}`", case.case_name),
    };
    let standard = inv.stage.is_none() && REQUIRED_PARAMS.contains(&flag.name.as_str());
    match parser.accepts(&option) {
        Accepts::Exact | Accepts::Prefix(_) => None,
        Accepts::Ambiguous(matches) => Some(format!(
            "{whose}: `{option}` is a prefix of several options of {}'s parser ({}; read from {read_from}): \
             argparse stops with \"ambiguous option\" — pass one of them in full",
            inv.run_file,
            matches.join(", ")
        )),
        Accepts::No => {
            let hint = match parser.closest(&option) {
                // Close: one edit per four characters of the name (`--nnodes`/`--nnode`,
                // `--conf_thres`/`--conf-thres`), never `--lr`/`--bs`.
                Some((near, d)) if d <= (flag.name.chars().count() / 4).max(1) => {
                    format!("did you mean `{near}`? ")
                }
                _ => {
                    let defined: Vec<&str> = parser
                        .options
                        .iter()
                        .filter(|o| o.starts_with("--") && o.as_str() != "--help")
                        .map(String::as_str)
                        .take(LISTED)
                        .collect();
                    format!("it defines {}; ", defined.join(", "))
                }
            };
            let fix = if standard {
                format!(
                    "add `parser.add_argument('{option}', …)` to the parser (the ModelZoo's check passes every standard parameter)"
                )
            } else {
                format!("rename it in the case file or add `{option}` to the parser")
            };
            Some(format!(
                "{whose}: `{option} {}` is not an option of {}'s parser (read from {read_from}): \
                 the ModelZoo's check would stop with \"unrecognized arguments: {option}\"; {hint}{fix}",
                flag.value.text, inv.run_file
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use crate::finding::ModelKind;
    use crate::layout::{Options, Validator};
    use crate::rules::{severity_of, Severity};

    /// The fixture zoo: a training and a TecoInference case file in the public ModelZoo's
    /// shapes, with run scripts of our own.
    fn zoo() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/case_params")
    }

    /// `(line, message)` of the args.case-params findings on `file`, with the review on or off.
    fn found(file: &str, review: bool) -> Vec<(usize, String)> {
        let mut v = Validator::new(&Options::default())
            .unwrap()
            .with_review(review);
        let report = v.check_path(&zoo().join(file)).unwrap();
        assert_eq!(report.kind, ModelKind::ZooCases);
        let others: Vec<_> = report
            .findings
            .iter()
            .filter(|f| f.rule != "args.case-params")
            .collect();
        assert!(
            others.is_empty(),
            "the fixture is otherwise clean: {others:?}"
        );
        report
            .findings
            .iter()
            .map(|f| (f.line.unwrap(), f.message.clone()))
            .collect()
    }

    #[test]
    fn params_the_run_files_parser_does_not_define_are_errors() {
        let file = "PyTorch/contrib/model_config/model.yaml";
        assert!(
            found(file, false).is_empty(),
            "a review rule: off without it"
        );
        let f = found(file, true);
        let lines: Vec<usize> = f.iter().map(|(l, _)| *l).collect();
        // nnodes (argument.py has --nnode), lr (--learning-rate), others.num_classes; not
        // batch_size (defined), warmup (a unique prefix of --warmup_epochs: argparse takes it).
        assert_eq!(lines, vec![7, 14, 19], "{f:#?}");
        let nnodes = &f[0].1;
        for part in [
            "case `octocat`: `--nnodes 1` is not an option of run_scripts/run_demo.py's parser",
            "read from run_scripts/run_demo.py, run_scripts/argument.py",
            "unrecognized arguments: --nnodes",
            "did you mean `--nnode`?",
            "add `parser.add_argument('--nnodes', …)`",
        ] {
            assert!(nnodes.contains(part), "{part:?} not in {nnodes}");
        }
        // Nothing close to --lr: the defined options are listed instead of a wrong guess.
        assert!(
            f[1].1.contains("it defines ") && f[1].1.contains("--learning-rate"),
            "{}",
            f[1].1
        );
        assert!(!f[1].1.contains("did you mean"), "{}", f[1].1);
        assert!(f[2].1.contains("rename it in the case file"), "{}", f[2].1);
        assert_eq!(severity_of("args.case-params"), Severity::Error);
    }

    #[test]
    fn each_teco_inference_stage_is_checked_against_its_own_script() {
        let f = found("TecoInference/contrib/model_config/model.yaml", true);
        // example_single_batch.py defines --conf-thres, not --conf_thres; the export and the
        // valid stage pass only what their scripts define; example_multi_batch.py builds its
        // options in a loop, so its --topk is not judged.
        assert_eq!(f.len(), 1, "{f:#?}");
        assert_eq!(f[0].0, 27);
        assert!(
            f[0].1
                .starts_with("case `octocat`, run_example_single: `--conf_thres 0.2`")
                && f[0].1.contains("did you mean `--conf-thres`?"),
            "{}",
            f[0].1
        );
    }

    /// A TecoInference model directory's index is the TecoInference case file: it lists the
    /// directory by its top-level `run_dir` (it used to be "not a usable model.yaml: no case
    /// lists a `desc.run_dir`", a model-yaml.entry error on every inference model).
    #[test]
    fn a_teco_inference_model_dir_is_listed_by_its_case_file() {
        let mut v = Validator::new(&Options::default()).unwrap();
        let report = v
            .check_path(&zoo().join("TecoInference/contrib/detection/tinydet"))
            .unwrap();
        let entry: Vec<_> = report
            .findings
            .iter()
            .filter(|f| f.rule == "model-yaml.entry")
            .collect();
        assert!(entry.is_empty(), "{entry:#?}");
    }

    #[test]
    fn a_zoo_root_has_both_case_files_checked() {
        let mut v = Validator::new(&Options::default())
            .unwrap()
            .with_review(true);
        let reports = v.check_tree(&zoo()).unwrap();
        let files: Vec<PathBuf> = reports
            .iter()
            .filter(|r| r.kind == ModelKind::ZooCases)
            .map(|r| r.dir.strip_prefix(zoo()).unwrap().to_path_buf())
            .collect();
        assert_eq!(
            files,
            vec![
                PathBuf::from("PyTorch/contrib/model_config/model.yaml"),
                PathBuf::from("TecoInference/contrib/model_config/model.yaml")
            ]
        );
    }
}
