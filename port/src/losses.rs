//! Which loss a run logged, and where: the file `--log` names, or the run's own console output,
//! read by the dllogger reader (tcap_dllogger's stdout and JSON lines, NVIDIA DLLogger, epoch
//! summaries, and every loss line plain scripts print: docs/port.md, "The loss-line rule").

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use validator::compare::is_training_loss;

/// The metrics tried, in order: the ModelZoo's name, then the names scripts print. When none
/// is there, the named losses of one line (`Loss_D`, `Loss_G`) are the run's losses.
pub const LOSS_METRICS: &[&str] = &["train.loss", "train_loss", "loss"];

/// Loss-like lines shown when no loss can be read, and the most of each shown.
const HINT_LINES: usize = 5;
const HINT_CHARS: usize = 200;

/// Where a run's losses are.
#[derive(Debug, Clone, PartialEq)]
pub struct LossSource {
    pub path: PathBuf,
    /// The loss metric, or the named losses of one line (`Loss_D`, `Loss_G`), each to be
    /// judged on its own (the verdict is the worst).
    pub metrics: Vec<String>,
    /// Values of `metrics[0]` for rank 0.
    pub values: usize,
    /// The last rank-0 value of each evaluation metric of the same log (`val.mAP`, `val.AP50`,
    /// … of a COCO summary; `val.loss`): shown beside the losses in PORT.md.
    pub eval: BTreeMap<String, f64>,
}

/// The most evaluation metrics kept from one log (a COCO summary per IoU type has 12).
const MAX_EVAL: usize = 64;

/// The loss series of one run: in `log` (relative to the run's directory `dir`) when given,
/// else in its `console`; `key` (`--loss-key`) picks one metric. Err says what was looked at,
/// shows the most loss-like lines of the output and what to do.
pub fn find(
    dir: &Path,
    console: &Path,
    log: Option<&Path>,
    key: Option<&str>,
) -> Result<LossSource, String> {
    let path = match log {
        Some(log) => {
            let path = dir.join(log);
            if !path.is_file() {
                return Err(format!(
                    "--log {}: the run wrote no such file ({} is {})",
                    log.display(),
                    path.display(),
                    if path.exists() {
                        "not a regular file"
                    } else {
                        "missing"
                    }
                ));
            }
            path
        }
        None => console.to_path_buf(),
    };
    let seen = read_metrics(&path)?;
    let found = |metrics: Vec<String>| {
        let values = seen.counts.get(&metrics[0]).copied().unwrap_or(0);
        LossSource {
            path: path.clone(),
            metrics,
            values,
            eval: seen.eval.clone(),
        }
    };
    if let Some(key) = key {
        if seen.counts.contains_key(key) {
            return Ok(found(vec![key.to_string()]));
        }
        return Err(format!(
            "--loss-key {key}: no such metric for rank 0 in {} ({}){}",
            path.display(),
            seen.listed(),
            hint(&path)
        ));
    }
    if let Some(m) = LOSS_METRICS.iter().find(|m| seen.counts.contains_key(**m)) {
        return Ok(found(vec![m.to_string()]));
    }
    if let Some(named) = seen.named.clone() {
        return Ok(found(named));
    }
    Err(format!(
        "no loss ({}, or named losses such as `Loss_D`) in {} ({}){}; print lines such as \
         `step 3 loss 1.234` on rank 0, log `train.loss` with tcap_dllogger \
         (docs/python_logger.md), give the log file the script writes with --log FILE, or pick \
         one of the metrics read with --loss-key NAME",
        LOSS_METRICS.join(", "),
        path.display(),
        seen.listed(),
        hint(&path)
    ))
}

/// What one read of a log found for rank 0.
struct Seen {
    /// Values per metric name.
    counts: BTreeMap<String, usize>,
    /// The training losses of the first record that has some and none of [`LOSS_METRICS`]
    /// (per-step ones before epoch averages, `train.avg_*`).
    named: Option<Vec<String>>,
    /// The last value of each `val.*` metric (at most [`MAX_EVAL`] names).
    eval: BTreeMap<String, f64>,
}

impl Seen {
    fn listed(&self) -> String {
        if self.counts.is_empty() {
            "no metric lines at all".to_string()
        } else {
            let mut names: Vec<&str> = self.counts.keys().map(String::as_str).take(40).collect();
            if self.counts.len() > names.len() {
                names.push("...");
            }
            format!("metrics read: {}", names.join(", "))
        }
    }
}

fn read_metrics(path: &Path) -> Result<Seen, String> {
    let mut reader = dllogger::open(path).map_err(|e| e.to_string())?;
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    let mut eval: BTreeMap<String, f64> = BTreeMap::new();
    let (mut named, mut averages): (Option<Vec<String>>, Option<Vec<String>>) = (None, None);
    while let Some(record) = reader.try_next().map_err(|e| e.to_string())? {
        if record.rank != 0 {
            continue;
        }
        for (name, value) in &record.metrics {
            *counts.entry(name.clone()).or_default() += 1;
            if name.starts_with("val.") && (eval.len() < MAX_EVAL || eval.contains_key(name)) {
                eval.insert(name.clone(), *value);
            }
        }
        if named.is_none() {
            let losses: Vec<String> = record
                .metrics
                .iter()
                .map(|(k, _)| k)
                .filter(|k| is_training_loss(k))
                .cloned()
                .collect();
            let (avg, step): (Vec<String>, Vec<String>) = losses
                .into_iter()
                .partition(|k| k.starts_with("train.avg_"));
            if !step.is_empty() {
                named = Some(step);
            } else if !avg.is_empty() && averages.is_none() {
                averages = Some(avg);
            }
        }
    }
    Ok(Seen {
        counts,
        named: named.or(averages),
        eval,
    })
}

/// The most loss-like lines of `path` (up to [`HINT_LINES`], in file order), for an error:
/// a line with the word `loss` followed by a digit before one with the word only.
fn hint(path: &Path) -> String {
    // A regular file only: a FIFO (a command can leave one as its log) would block here.
    let Ok(file) = modelzoo_support::input::open_regular(path, "log") else {
        return String::new();
    };
    let mut reader = BufReader::new(file);
    let mut best: Vec<(u8, usize, String)> = Vec::new();
    let mut buf = Vec::new();
    let mut no = 0usize;
    loop {
        buf.clear();
        // At most 4 KiB of a line is looked at; the rest is passed over.
        match reader.by_ref().take(4096).read_until(b'\n', &mut buf) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        no += 1;
        if buf.last() != Some(&b'\n') {
            skip_rest_of_line(&mut reader);
        }
        let score = loss_likeness(&buf);
        if score == 0 || best.iter().filter(|b| b.0 >= score).count() >= HINT_LINES {
            continue;
        }
        best.push((score, no, shown(&buf)));
        best.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        best.truncate(HINT_LINES);
    }
    if best.is_empty() {
        return "; no line of it mentions a loss".to_string();
    }
    best.sort_by_key(|b| b.1);
    let lines: Vec<String> = best
        .iter()
        .map(|(_, no, text)| format!("line {no}: {text}"))
        .collect();
    format!(
        "; its most loss-like lines — {} — are not lines the loss-line rule reads (docs/port.md)",
        lines.join("; ")
    )
}

fn skip_rest_of_line(reader: &mut impl BufRead) {
    loop {
        let (done, n) = match reader.fill_buf() {
            Ok([]) | Err(_) => return,
            Ok(b) => match b.iter().position(|&c| c == b'\n') {
                Some(i) => (true, i + 1),
                None => (false, b.len()),
            },
        };
        reader.consume(n);
        if done {
            return;
        }
    }
}

/// 2: the word `loss` (any case) with a digit within 24 bytes after it; 1: the word only.
fn loss_likeness(line: &[u8]) -> u8 {
    let lower = line.to_ascii_lowercase();
    let mut score = 0;
    for at in (0..lower.len().saturating_sub(3)).filter(|&i| lower[i..].starts_with(b"loss")) {
        let after = &lower[at + 4..(at + 28).min(lower.len())];
        score = score.max(1 + u8::from(after.iter().any(u8::is_ascii_digit)));
    }
    score
}

/// A line as shown in an error that also goes into PORT.md: its last `\r` segment (what a
/// terminal shows), control characters escaped, cut to [`HINT_CHARS`] characters, as a
/// Markdown code span.
fn shown(line: &[u8]) -> String {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let seg = line.rsplit(|&c| c == b'\r').next().unwrap_or(line);
    let text = String::from_utf8_lossy(seg);
    let mut out = String::new();
    for (n, c) in text.trim().chars().enumerate() {
        if n == HINT_CHARS {
            out.push('…');
            break;
        }
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    code_span(&out)
}

/// `text` as a Markdown code span: fenced by one backtick more than its longest run.
fn code_span(text: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    let fence = "`".repeat(longest + 1);
    let pad = if text.starts_with('`') || text.ends_with('`') || text.is_empty() {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{text}{pad}{fence}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, text: &str) -> PathBuf {
        let console = dir.join("console.log");
        std::fs::write(&console, text).unwrap();
        console
    }

    #[test]
    fn the_modelzoo_name_first_then_plain_loss_lines_and_a_clear_miss() {
        let tmp = tempfile::tempdir().unwrap();
        let console = write(tmp.path(), "banner\nstep 0 loss 2.5\nstep 1 loss 2.25\n");
        let found = find(tmp.path(), &console, None, None).unwrap();
        assert_eq!((found.metrics, found.values), (vec!["loss".to_string()], 2));

        write(
            tmp.path(),
            "TCAPPDLL 2026-01-01 00:00:00.000000 - Epoch: 0 Iteration: 1  rank : 0  train.loss : 2.5 \nloss 1.0\n",
        );
        assert_eq!(
            find(tmp.path(), &console, None, None).unwrap().metrics,
            ["train.loss"]
        );

        write(tmp.path(), "nothing to see\n");
        let err = find(tmp.path(), &console, None, None).unwrap_err();
        assert!(
            err.contains("--log FILE") && err.contains("--loss-key"),
            "{err}"
        );
        assert!(err.contains("no line of it mentions a loss"), "{err}");
        let err = find(tmp.path(), &console, Some(Path::new("out/log.json")), None).unwrap_err();
        assert!(err.contains("missing"), "{err}");
    }

    /// Issue #39 item 5: a detection script's console (Deformable-DETR's `MetricLogger`, its
    /// evaluation and the COCO summary) is read by the same reader as compare's: the loss is
    /// `train.loss` (the window's median), never a sub-loss, numbered by the global step.
    #[test]
    fn a_detection_console_gives_train_loss_by_global_step() {
        let tmp = tempfile::tempdir().unwrap();
        let mut text = String::from("Start training\n");
        for epoch in 0..2u64 {
            for i in [0u64, 10, 13] {
                let l = 30.0 - (epoch * 14 + i) as f64;
                text.push_str(&format!(
                    "Epoch: [{epoch}]  [{i:>2}/14]  eta: 0:00:05  lr: 0.000200  class_error: 100.00  grad_norm: 40.00  loss: {l:.4} ({:.4})  loss_ce: 2.0000 (2.1000)  loss_bbox_unscaled: 0.5000 (0.5100)  time: 0.5000  data: 0.0100\n",
                    l + 1.0
                ));
            }
            text.push_str("Averaged stats: lr: 0.000200  loss: 20.0000 (21.0000)\n");
            text.push_str(
                "Test:  [0/1]  eta: 0:00:00  loss: 25.0000 (25.0000)  time: 0.1  data: 0.0\n",
            );
            text.push_str("IoU metric: bbox\n Average Precision  (AP) @[ IoU=0.50:0.95 | area=   all | maxDets=100 ] = 0.001\n");
        }
        let console = write(tmp.path(), &text);
        let found = find(tmp.path(), &console, None, None).unwrap();
        assert_eq!(
            (found.metrics, found.values),
            (vec!["train.loss".to_string()], 6)
        );
        let series = crate::steps::Series::read(&console, "train.loss").unwrap();
        let got: Vec<(Option<u64>, Option<u64>, f64)> = series
            .points
            .iter()
            .map(|p| (p.epoch, p.iteration, p.value))
            .collect();
        let want: Vec<(Option<u64>, Option<u64>, f64)> = (0..2u64)
            .flat_map(|e| {
                [0u64, 10, 13].map(|i| (Some(e), Some(e * 14 + i), 30.0 - (e * 14 + i) as f64))
            })
            .collect();
        assert_eq!(got, want);
        let found = find(tmp.path(), &console, None, Some("train.loss_ce")).unwrap();
        assert_eq!(found.values, 6);
    }

    /// The COCO summary torchvision's detection reference prints after each epoch: the last
    /// value of each `val.*` metric is kept beside the loss (`-1.000`, no object of that size,
    /// is no value); training metrics are not evaluation ones.
    #[test]
    fn the_last_evaluation_summary_is_kept_beside_the_loss() {
        let tmp = tempfile::tempdir().unwrap();
        let mut text = String::new();
        for (epoch, ap) in [(0, 0.125), (1, 0.25)] {
            text.push_str(&format!(
                "Epoch: [{epoch}]  [0/4]  eta: 0:00:08  lr: 0.006680  loss: 5.3222 (5.3222)  loss_classifier: 4.5396 (4.5396)  time: 2.0  data: 0.01  max mem: 0\n\
                 Test:  [0/3]  eta: 0:00:00  model_time: 0.07 (0.07)  evaluator_time: 0.01 (0.01)  time: 0.09  data: 0.00\n\
                 IoU metric: bbox\n \
                 Average Precision  (AP) @[ IoU=0.50:0.95 | area=   all | maxDets=100 ] = {ap:.3}\n \
                 Average Precision  (AP) @[ IoU=0.50      | area=   all | maxDets=100 ] = {:.3}\n \
                 Average Precision  (AP) @[ IoU=0.50:0.95 | area= large | maxDets=100 ] = -1.000\n",
                ap * 2.0
            ));
        }
        let console = write(tmp.path(), &text);
        let found = find(tmp.path(), &console, None, None).unwrap();
        assert_eq!(found.metrics, ["train.loss"]);
        let eval: Vec<(&str, f64)> = found.eval.iter().map(|(k, v)| (k.as_str(), *v)).collect();
        assert_eq!(eval, [("val.AP50", 0.5), ("val.mAP", 0.25)]);
    }

    #[test]
    fn named_losses_of_one_line_then_loss_key_picks_one() {
        let tmp = tempfile::tempdir().unwrap();
        // dcgan's lines: no plain `loss`, two named losses; an epoch average comes last.
        let console = write(
            tmp.path(),
            "[0/25][0/1563] Loss_D: 1.8 Loss_G: 4.1 D(x): 0.5 D(G(z)): 0.4 / 0.3\n\
             [0/25][1/1563] Loss_D: 1.6 Loss_G: 4.0 D(x): 0.5 D(G(z)): 0.4 / 0.3\n\
             Test set: Average loss: 0.5, Accuracy: 10/20 (50%)\n",
        );
        let found = find(tmp.path(), &console, None, None).unwrap();
        assert_eq!(found.metrics, ["Loss_D", "Loss_G"]);
        assert_eq!(found.values, 2);
        let found = find(tmp.path(), &console, None, Some("Loss_G")).unwrap();
        assert_eq!(
            (found.metrics, found.values),
            (vec!["Loss_G".to_string()], 2)
        );
        let err = find(tmp.path(), &console, None, Some("loss")).unwrap_err();
        assert!(err.contains("Loss_D, Loss_G"), "{err}");

        // A plain `loss` among named ones is the loss; an epoch average is not per step.
        write(
            tmp.path(),
            "====> Epoch: 1 Average loss: 164.2\nloss_cls: 0.1, loss_bbox: 0.2, loss: 0.3\n",
        );
        let found = find(tmp.path(), &console, None, None).unwrap();
        assert_eq!(found.metrics, ["loss"]);
        write(tmp.path(), "====> Epoch: 1 Average loss: 164.2\n");
        let found = find(tmp.path(), &console, None, None).unwrap();
        assert_eq!(found.metrics, ["train.avg_loss"]);
    }

    #[test]
    fn a_miss_shows_the_most_loss_like_lines_escaped_and_cut() {
        let tmp = tempfile::tempdir().unwrap();
        let long = format!("my loss is `{}`", "x".repeat(400));
        let text = format!(
            "start\nLoss function: CrossEntropy\nloss -> 2.5 (step 3)\n\x1b[1mLOSS\x1b[0m => 1.25\n{long}\nprogress\rloss ~ 7\nvalue 1\nthe loss was fine\n"
        );
        let console = write(tmp.path(), &text);
        let err = find(tmp.path(), &console, None, None).unwrap_err();
        // Lines with a number after the word first, then the word only, shown in file order.
        for want in [
            "line 2: `Loss function: CrossEntropy`",
            "line 3: `loss -> 2.5 (step 3)`",
            "line 4: `\\u{1b}[1mLOSS\\u{1b}[0m => 1.25`",
            "line 6: `loss ~ 7`",
        ] {
            assert!(err.contains(want), "{want} in {err}");
        }
        assert!(err.contains("line 5: ``my loss is `xxx"), "{err}");
        assert!(err.contains("…``"), "{err}");
        // Five at most: the last line with the word only is left out.
        assert!(
            !err.contains("line 1:") && !err.contains("line 7:"),
            "{err}"
        );
        assert!(!err.contains("line 8:"), "{err}");
        assert!(
            !err.contains(&"x".repeat(200)),
            "cut to 200 characters: {err}"
        );
    }
}
