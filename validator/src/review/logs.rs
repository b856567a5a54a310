//! The logs a model directory ships and the figures it quotes: logs.device, logs.identical,
//! results.figures, results.verdict, results.signed-pass, results.unverifiable.
//!
//! Figures are recomputed with the ModelZoo's rule (its `run_scripts/loss.py`): both series cut
//! to the shorter, MeanRelativeError = mean((sdaa−cuda)/cuda), MeanAbsoluteError =
//! mean(sdaa−cuda), pass when the first ≤ 0.05 or the second ≤ 0.0002. The values are read the
//! way loss.py reads them ([`crate::losspy`], streamed); a log loss.py's patterns read nothing
//! from (models adapt the pattern in their loss.py) is read with this kit's log reader
//! ([`crate::compare::read_series_of_first`], rank 0's `train.loss`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use regex::Regex;

use super::commands::{Commands, Source};
use super::files::{for_each_line, line_of, read_text, same_bytes};
use super::Context;
use crate::compare::{read_series_of_first, DEFAULT_METRIC, METRIC_FALLBACKS};
use crate::devices::{device_of, wrong_device_evidence, Device};
use crate::finding::{Finding, LossPair, PairSource};
use crate::losspy;

/// loss.py's thresholds.
const MEAN_REL: f64 = 0.05;
const MEAN_DIFF: f64 = 0.0002;

impl LossPair {
    /// The two series again (for the report's picture): (cuda, sdaa), cut to the shorter.
    pub fn values(&self) -> Option<(Vec<f64>, Vec<f64>)> {
        let (c, s) = match &self.source {
            PairSource::Logs { cuda, sdaa } => {
                let (c, s, _) = read_pair(cuda, sdaa)?;
                (c, s)
            }
            PairSource::Combined { file } => {
                let text = read_text(file)?;
                let parsed = parse_combined(&text)?;
                (parsed.cuda, parsed.sdaa)
            }
        };
        let n = c.len().min(s.len());
        Some((c[..n].to_vec(), s[..n].to_vec()))
    }
}

/// A log the rules look at: a `.log` file, or a `.txt` whose name says its device, or a loss
/// file in JSON whose name says its device (`resnet_cuda_loss.json`).
fn is_log(name: &str) -> bool {
    let n = name.to_lowercase();
    n.ends_with(".log")
        || ((n.ends_with(".txt") || (n.ends_with(".json") && n.contains("loss")))
            && device_of(name).is_some())
}

/// Whether a file name is a log of one device (`cuda.log`, `rexnetCifar100Sdaa.log`): what
/// marks a directory as a model's when `--all` walks a tree.
pub(crate) fn is_device_log(name: &str) -> bool {
    is_log(name) && device_of(name).is_some()
}

/// The figures a text quotes (loss.py's printout): each with its line and the text as written.
#[derive(Debug, Default)]
struct Quoted {
    mre: Option<(usize, String)>,
    mae: Option<(usize, String)>,
    /// `pass` / `fail` and its line.
    verdict: Option<(usize, bool)>,
}

fn quoted(text: &str) -> Quoted {
    static MRE: OnceLock<Regex> = OnceLock::new();
    static MAE: OnceLock<Regex> = OnceLock::new();
    static VERDICT: OnceLock<Regex> = OnceLock::new();
    const NUM: &str = r"(-?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)";
    let mre = MRE.get_or_init(|| {
        Regex::new(&format!(r"MeanRelativeError\s*[:=：]?\s*{NUM}")).expect("valid regex")
    });
    let mae = MAE.get_or_init(|| {
        Regex::new(&format!(r"MeanAbsoluteError\s*[:=：]?\s*{NUM}")).expect("valid regex")
    });
    let verdict = VERDICT.get_or_init(|| {
        Regex::new(r"(?mi)^[\s>*`|-]*(pass|fail)(?:ed)?[\s:,]*mean[ _]?relative[ _]?error")
            .expect("valid regex")
    });
    let find = |re: &Regex| {
        re.captures(text).map(|c| {
            let m = c.get(1).expect("group");
            (line_of(text, m.start()), m.as_str().to_string())
        })
    };
    Quoted {
        mre: find(mre),
        mae: find(mae),
        verdict: verdict.captures(text).map(|c| {
            let m = c.get(1).expect("group");
            (
                line_of(text, m.start()),
                m.as_str().eq_ignore_ascii_case("pass"),
            )
        }),
    }
}

/// Whether `written` (a figure as quoted) is `value` to the digits it shows.
fn agrees(written: &str, value: f64) -> bool {
    let Ok(q) = written.parse::<f64>() else {
        return true;
    };
    if !value.is_finite() {
        return false;
    }
    let lower = written.to_lowercase();
    let (mantissa, exp) = match lower.split_once('e') {
        Some((m, e)) => (m, e.parse::<i32>().unwrap_or(0)),
        None => (lower.as_str(), 0),
    };
    let decimals = mantissa
        .split_once('.')
        .map(|(_, d)| d.len() as i32)
        .unwrap_or(0);
    let tol = 0.5 * 10f64.powi(exp - decimals) * (1.0 + 1e-9) + value.abs() * 1e-12;
    (q - value).abs() <= tol
}

/// What the ModelZoo rule gives on two series.
fn rule(cuda: &[f64], sdaa: &[f64]) -> (usize, f64, f64, bool) {
    let n = cuda.len().min(sdaa.len());
    let (mut rel, mut diff) = (0.0, 0.0);
    for (c, s) in cuda[..n].iter().zip(&sdaa[..n]) {
        rel += (s - c) / c;
        diff += s - c;
    }
    let (mre, mae) = (rel / n as f64, diff / n as f64);
    (n, mre, mae, mre <= MEAN_REL || mae <= MEAN_DIFF)
}

/// The values of a CUDA and an SDAA log as loss.py reads them, else (when it reads nothing
/// from either) as the log reader does; with how they were read.
fn read_pair(cuda: &Path, sdaa: &Path) -> Option<(Vec<f64>, Vec<f64>, &'static str)> {
    let extract = |p: &Path| -> Option<losspy::Extraction> {
        let f = model_config::files::open_regular(p).ok()?;
        losspy::extract_from(std::io::Read::take(f, super::files::MAX_LOG)).ok()
    };
    let (c, s) = (extract(cuda)?, extract(sdaa)?);
    if !c.is_empty()
        && !s.is_empty()
        && c.first_unparsable.is_none()
        && s.first_unparsable.is_none()
    {
        return Some((c.values, s.values, "loss.py"));
    }
    let metrics: Vec<&str> = std::iter::once(DEFAULT_METRIC)
        .chain(METRIC_FALLBACKS)
        .collect();
    let read = |p: &Path, role| {
        read_series_of_first(p, role, &metrics, 0)
            .ok()
            .map(|s| s.steps.values().to_vec())
            .filter(|v| !v.is_empty())
    };
    Some((
        read(cuda, "baseline")?,
        read(sdaa, "candidate")?,
        "log reader",
    ))
}

/// A combined loss file: `=== CUDA ===` rows, `=== SDAA ===` rows, `=== RESULT ===` printout.
struct Combined {
    cuda: Vec<f64>,
    sdaa: Vec<f64>,
    /// Byte offset of the RESULT section (its quoted figures are searched from there).
    result_at: Option<usize>,
}

fn parse_combined(text: &str) -> Option<Combined> {
    let c = text.find("=== CUDA ===")?;
    let s = text.find("=== SDAA ===")?;
    let r = text.find("=== RESULT ===");
    let numbers = |t: &str| -> Vec<f64> {
        t.split_whitespace()
            .filter_map(|w| w.trim_matches(',').parse::<f64>().ok())
            .collect()
    };
    let (cuda_text, sdaa_text) = if c < s {
        (
            &text[c + 12..s],
            &text[s + 12..r.filter(|&r| r > s).unwrap_or(text.len())],
        )
    } else {
        (
            &text[c + 12..r.filter(|&r| r > c).unwrap_or(text.len())],
            &text[s + 12..c],
        )
    };
    Some(Combined {
        cuda: numbers(cuda_text),
        sdaa: numbers(sdaa_text),
        result_at: r,
    })
}

/// Pairs of device-named logs in one directory: the names test.sh gives loss.py
/// (`--sdaa-log X --cuda-log Y`), else `cuda.log` / `sdaa.log`, else names equal but for the
/// device word, else the only CUDA log with the only SDAA log.
fn pairs_in(logs: &[(PathBuf, Device)], named: &[(String, String)]) -> Vec<(PathBuf, PathBuf)> {
    let mut by_dir: BTreeMap<PathBuf, Vec<(PathBuf, Device)>> = BTreeMap::new();
    for (p, d) in logs {
        by_dir
            .entry(p.parent().map(Path::to_path_buf).unwrap_or_default())
            .or_default()
            .push((p.clone(), *d));
    }
    let mut out = Vec::new();
    for (dir, logs) in by_dir {
        let name = |p: &PathBuf| {
            p.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default()
        };
        let cudas: Vec<&PathBuf> = logs
            .iter()
            .filter(|l| l.1 == Device::Cuda)
            .map(|l| &l.0)
            .collect();
        let sdaas: Vec<&PathBuf> = logs
            .iter()
            .filter(|l| l.1 == Device::Sdaa)
            .map(|l| &l.0)
            .collect();
        if cudas.is_empty() || sdaas.is_empty() {
            continue;
        }
        if let Some((s, c)) = named.iter().find(|(s, c)| {
            dir.join(s).is_file() && dir.join(c).is_file() && device_of(s) != device_of(c)
        }) {
            out.push((dir.join(c), dir.join(s)));
            continue;
        }
        let exact = (
            cudas.iter().find(|p| name(p) == "cuda.log"),
            sdaas.iter().find(|p| name(p) == "sdaa.log"),
        );
        if let (Some(c), Some(s)) = exact {
            out.push(((*c).clone(), (*s).clone()));
            continue;
        }
        let mut paired = false;
        for c in &cudas {
            let n = name(c).to_lowercase();
            for word in ["cuda", "gpu"] {
                let want = n.replace(word, "sdaa");
                if let Some(s) = sdaas.iter().find(|s| name(s).to_lowercase() == want) {
                    out.push(((*c).clone(), (*s).clone()));
                    paired = true;
                }
            }
        }
        if !paired && cudas.len() == 1 && sdaas.len() == 1 {
            out.push((cudas[0].clone(), sdaas[0].clone()));
        }
    }
    out
}

pub(super) fn check(ctx: &Context, cmds: &Commands, out: &mut Vec<Finding>) -> Vec<LossPair> {
    // Device-named logs, and logs.device on each.
    let mut logs: Vec<(PathBuf, Device)> = Vec::new();
    let mut combined: Vec<PathBuf> = Vec::new();
    for e in ctx.tree.files() {
        let name = e.name();
        let path = ctx.dir.join(&e.rel);
        if is_log(&name) {
            if let Some(dev) = device_of(&name) {
                logs.push((path.clone(), dev));
                check_device(ctx, &path, dev, out);
            }
        }
        let lower = name.to_lowercase();
        if lower.ends_with(".txt")
            && (lower.contains("loss") || lower.contains("result") || lower.contains("compare"))
            && e.len <= super::files::MAX_TEXT
        {
            if let Some(text) = read_text(&path) {
                if text.contains("=== CUDA ===") && text.contains("=== SDAA ===") {
                    combined.push(path);
                }
            }
        }
    }
    // The names test.sh passes loss.py.
    let named: Vec<(String, String)> = cmds
        .all
        .iter()
        .filter(|c| c.source == Source::Script)
        .filter_map(|c| {
            let s = c.option_value(&["--sdaa-log", "--sdaa_log"])?;
            let k = c.option_value(&["--cuda-log", "--cuda_log"])?;
            let base = |w: &str| w.rsplit('/').next().unwrap_or(w).to_string();
            Some((base(s), base(k)))
        })
        .collect();

    let mut compared = Vec::new();
    for (cuda, sdaa) in pairs_in(&logs, &named) {
        if same_bytes(&cuda, &sdaa) {
            out.push(ctx.finding(
                &cuda,
                None,
                "logs.identical",
                format!(
                    "byte-identical to {}: the CUDA baseline is a copy of the SDAA run, so the comparison proves nothing — ship the log of the CUDA run",
                    ctx.rel(&sdaa).display()
                ),
            ));
        }
        let Some((c, s, read_as)) = read_pair(&cuda, &sdaa) else {
            continue;
        };
        if !same_bytes(&cuda, &sdaa) && c.len() >= 2 && c == s {
            out.push(ctx.finding(
                &cuda,
                None,
                "logs.identical",
                format!(
                    "holds the same {} loss values as {} (read by {}): the CUDA baseline is a copy of the SDAA run's numbers — ship the log of the CUDA run",
                    c.len(),
                    ctx.rel(&sdaa).display(),
                    read_by(read_as)
                ),
            ));
        }
        let (steps, mre, mae, pass) = rule(&c, &s);
        compared.push(LossPair {
            source: PairSource::Logs { cuda, sdaa },
            read_as,
            cuda_values: c.len(),
            sdaa_values: s.len(),
            steps,
            mean_relative_error: mre,
            mean_absolute_error: mae,
            pass,
        });
    }
    for file in &combined {
        let Some(text) = read_text(file) else {
            continue;
        };
        let Some(parsed) = parse_combined(&text) else {
            continue;
        };
        if parsed.cuda.is_empty() || parsed.sdaa.is_empty() {
            continue;
        }
        let (steps, mre, mae, pass) = rule(&parsed.cuda, &parsed.sdaa);
        let pair = LossPair {
            source: PairSource::Combined { file: file.clone() },
            read_as: "rows",
            cuda_values: parsed.cuda.len(),
            sdaa_values: parsed.sdaa.len(),
            steps,
            mean_relative_error: mre,
            mean_absolute_error: mae,
            pass,
        };
        // The file's own RESULT printout against its rows.
        let offset = parsed.result_at.unwrap_or(0);
        let mut q = quoted(&text[offset..]);
        let shift = line_of(&text, offset) - 1;
        for (l, _) in [&mut q.mre, &mut q.mae].into_iter().flatten() {
            *l += shift;
        }
        if let Some((l, _)) = &mut q.verdict {
            *l += shift;
        }
        judge(ctx, file, &q, Some(&pair), "its own rows", out);
        compared.push(pair);
    }

    // The README's figures against what the directory ships.
    if let Some((readme, text)) = &ctx.readme {
        let q = quoted(text);
        let pair = match compared.as_slice() {
            [only] => Some(only),
            [] => None,
            many => many
                .iter()
                .find(|p| match &p.source {
                    PairSource::Logs { cuda, .. } => {
                        cuda.parent().is_some_and(|d| d.ends_with("run_scripts"))
                    }
                    PairSource::Combined { .. } => false,
                })
                .or(many.first()),
        };
        if q.mre.is_some() || q.mae.is_some() {
            let what = pair.map(|p| describe(ctx, p)).unwrap_or_default();
            judge(ctx, readme, &q, pair, &what, out);
            if pair.is_none() {
                let (l, _) = q.mre.as_ref().or(q.mae.as_ref()).expect("a figure");
                out.push(ctx.finding(
                    readme,
                    Some(*l),
                    "results.unverifiable",
                    "quotes loss.py's figures, but the directory ships no CUDA log and SDAA log pair (cuda.log / sdaa.log) nor a combined loss file to recompute them from — add the two logs the figures come from".into(),
                ));
            }
        } else if let Some((l, false)) = q.verdict {
            out.push(verdict_fail(ctx, readme, l));
        }
    }
    compared
}

/// How a pair's values were read, in words.
pub(super) fn read_by(read_as: &str) -> &'static str {
    match read_as {
        "loss.py" => "loss.py's patterns",
        "rows" => "the file's CUDA/SDAA rows",
        _ => "the log reader (rank 0's train.loss)",
    }
}

fn describe(ctx: &Context, p: &LossPair) -> String {
    match &p.source {
        PairSource::Logs { cuda, sdaa } => format!(
            "{} and {}",
            ctx.rel(cuda).display(),
            ctx.rel(sdaa).display()
        ),
        PairSource::Combined { file } => ctx.rel(file).display().to_string(),
    }
}

fn verdict_fail(ctx: &Context, path: &Path, line: usize) -> Finding {
    ctx.finding(
        path,
        Some(line),
        "results.verdict",
        "the results say `fail`: the SDAA run does not meet the ModelZoo's precision rule by its own figures — fix the precision (modelzoo compare, modelzoo diff) and re-run before submitting".into(),
    )
}

/// results.figures, results.verdict, results.signed-pass on one text's quoted figures.
fn judge(
    ctx: &Context,
    path: &Path,
    q: &Quoted,
    pair: Option<&LossPair>,
    against: &str,
    out: &mut Vec<Finding>,
) {
    if let Some((l, false)) = q.verdict {
        out.push(verdict_fail(ctx, path, l));
    }
    if let Some(p) = pair {
        let mut wrong = Vec::new();
        if let Some((_, w)) = &q.mre {
            if !agrees(w, p.mean_relative_error) {
                wrong.push(format!(
                    "MeanRelativeError {w} (recomputed: {})",
                    p.mean_relative_error
                ));
            }
        }
        if let Some((_, w)) = &q.mae {
            if !agrees(w, p.mean_absolute_error) {
                wrong.push(format!(
                    "MeanAbsoluteError {w} (recomputed: {})",
                    p.mean_absolute_error
                ));
            }
        }
        if !wrong.is_empty() {
            let line = q.mre.as_ref().or(q.mae.as_ref()).map(|(l, _)| *l);
            out.push(ctx.finding(
                path,
                line,
                "results.figures",
                format!(
                    "quotes {} — the ModelZoo rule on {against} ({} steps, values read by {}) gives other figures{}: quote what loss.py prints on the logs shipped, or ship the logs the figures come from",
                    wrong.join(", "),
                    p.steps,
                    read_by(p.read_as),
                    if p.pass { "" } else { ", and a fail" }
                ),
            ));
        }
    }
    // A pass that holds only because the signed means are negative.
    if let Some((l, w)) = &q.mre {
        let Ok(mre) = w.parse::<f64>() else {
            return;
        };
        let mae = q.mae.as_ref().and_then(|(_, w)| w.parse::<f64>().ok());
        let passes = match q.verdict {
            Some((_, v)) => v,
            None => mre <= MEAN_REL || mae.is_some_and(|m| m <= MEAN_DIFF),
        };
        if passes && mre.abs() > MEAN_REL {
            out.push(ctx.finding(
                path,
                Some(*l),
                "results.signed-pass",
                format!(
                    "passes with a mean relative error of {:+.1}%: beyond ±5%, it passes only because loss.py's means are signed ({}) — the SDAA loss is far from CUDA's; check the curves (`modelzoo compare --rule rel1`) before claiming a match",
                    mre * 100.0,
                    if mre < 0.0 {
                        "a negative mean relative error is ≤ 0.05".to_string()
                    } else {
                        format!(
                            "a negative mean absolute error{} is ≤ 0.0002",
                            mae.map(|m| format!(" ({m})")).unwrap_or_default()
                        )
                    }
                ),
            ));
        }
    }
}

/// logs.device on one log: the first line that shows another device than its name.
fn check_device(ctx: &Context, path: &Path, dev: Device, out: &mut Vec<Finding>) {
    let mut hit: Option<(usize, &'static str, String)> = None;
    let _ = for_each_line(path, |no, bytes| {
        let line = String::from_utf8_lossy(bytes);
        if let Some(w) = wrong_device_evidence(dev, &line) {
            hit = Some((no, w, line.trim().chars().take(100).collect()));
            return false;
        }
        true
    });
    if let Some((no, what, text)) = hit {
        let (named, ran) = match dev {
            Device::Cuda => ("a CUDA log", "an SDAA run"),
            Device::Sdaa => ("an SDAA log", "a run on another device"),
        };
        out.push(ctx.finding(
            path,
            Some(no),
            "logs.device",
            format!(
                "named as {named} but it is {ran}: {what} (`{text}`) — the comparison is not SDAA against CUDA; ship the log of a real run on the device its name says"
            ),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_agree_to_the_digits_quoted() {
        assert!(agrees("0.00042223225725652325", 0.00042223225725652325));
        assert!(agrees("0.0042", 0.004217));
        assert!(!agrees("0.0042", 0.0043));
        assert!(agrees("-3.3e-3", -0.00331));
        assert!(!agrees("0.00042", 0.0));
        assert!(!agrees("0.1", f64::NAN));
    }

    #[test]
    fn quoted_figures_and_verdicts() {
        let q = quoted("x\nMeanRelativeError: -0.38\nMeanAbsoluteError:-2.3\nRule,mean_absolute_error -2.3\npass mean_relative_error=-0.38 <= 0.05 or\n");
        assert_eq!(q.mre, Some((2, "-0.38".into())));
        assert_eq!(q.mae, Some((3, "-2.3".into())));
        assert_eq!(q.verdict, Some((5, true)));
        let q = quoted("fail mean_relative_error=0.13 <= 0.05\n");
        assert_eq!(q.verdict, Some((1, false)));
        let q = quoted("passmean_relative_error=-0.001 <=0.05\n");
        assert_eq!(q.verdict, Some((1, true)));
    }

    #[test]
    fn device_logs() {
        assert!(is_log("resnet_cuda_loss.json") && !is_log("cuda_config.json"));
        assert!(is_device_log("rexnetCifar100Sdaa.log") && !is_device_log("train.log"));
    }

    #[test]
    fn camel_case_logs_pair_by_their_names() {
        let logs = vec![
            (PathBuf::from("m/rexnetCifar100Cuda.log"), Device::Cuda),
            (PathBuf::from("m/rexnetCifar100Sdaa.log"), Device::Sdaa),
            (PathBuf::from("m/rexnetImagenetCuda.log"), Device::Cuda),
            (PathBuf::from("m/rexnetImagenetSdaa.log"), Device::Sdaa),
        ];
        assert_eq!(
            pairs_in(&logs, &[]),
            vec![
                (
                    PathBuf::from("m/rexnetCifar100Cuda.log"),
                    PathBuf::from("m/rexnetCifar100Sdaa.log")
                ),
                (
                    PathBuf::from("m/rexnetImagenetCuda.log"),
                    PathBuf::from("m/rexnetImagenetSdaa.log")
                ),
            ]
        );
    }
}
