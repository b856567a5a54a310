//! `finished_info`: what one round measured, from the bench's wall clock and the driver
//! events the run logged (`modelzoo_engine::driver`), with FlagPerf's invariants checked.

use std::collections::BTreeMap;
use std::io::BufRead;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::config::Resolved;

/// What the run's JSON metric log holds that finished_info needs.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LogFacts {
    /// Driver events (INIT_START ... FINISHED) → their fields.
    pub events: BTreeMap<String, BTreeMap<String, f64>>,
    /// The `PARAMETER` record (`global_batch_size`, ...).
    pub parameters: BTreeMap<String, f64>,
    /// The last value of each metric logged at a step (`val.top1`, `val.loss`, ...).
    pub last: BTreeMap<String, f64>,
}

impl LogFacts {
    /// A field of a driver event.
    pub fn event(&self, name: &str, field: &str) -> Option<f64> {
        self.events.get(name).and_then(|f| f.get(field)).copied()
    }
}

/// Read the `TCAPPDLL {json}` lines of a run's JSON stream (`<output_dir>/<model>_log.json`).
pub fn read_log(path: &Path) -> Result<LogFacts, String> {
    let file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut facts = LogFacts::default();
    for line in std::io::BufReader::new(file).lines() {
        let line = line.map_err(|e| format!("{}: {e}", path.display()))?;
        let Some(json) = line.trim().strip_prefix("TCAPPDLL ") else {
            continue;
        };
        let Ok(rec) = serde_json::from_str::<serde_json::Value>(json) else {
            continue;
        };
        if rec.get("type").and_then(|t| t.as_str()) != Some("LOG") {
            continue;
        }
        let numbers = |data: &serde_json::Value| -> BTreeMap<String, f64> {
            data.as_object()
                .into_iter()
                .flatten()
                .filter_map(|(k, v)| v.as_f64().map(|x| (k.clone(), x)))
                .collect()
        };
        let data = rec.get("data").map(numbers).unwrap_or_default();
        match rec.get("step") {
            Some(serde_json::Value::String(s)) if s == "PARAMETER" => facts.parameters.extend(data),
            Some(serde_json::Value::String(s)) => {
                facts.events.insert(s.clone(), data);
            }
            _ => facts.last.extend(data),
        }
    }
    Ok(facts)
}

/// The peak MFU was computed against, and where it comes from.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Peak {
    /// FLOP/s of one device.
    pub flops: f64,
    pub source: String,
}

/// One round's figures (FlagPerf's `finished_info`, plus what reading it needs). Times in
/// seconds, throughputs in `items_unit` per second, memory in bytes.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FinishedInfo {
    pub case: String,
    pub round: usize,
    /// The round ran on the SDAA emulator (every op on the host's CPU): its figures are not SDAA
    /// hardware figures. Every output marks it EMULATOR.
    #[serde(default)]
    pub emulated: bool,
    pub model: String,
    pub framework: String,
    pub hardware: String,
    pub vendor: String,
    pub nnodes: usize,
    pub nproc: usize,
    pub world_size: usize,
    pub precision: String,
    pub global_batch: Option<f64>,
    /// Wall time of the round: launch to the exit of every node's launcher (bench clock).
    pub e2e_time: f64,
    /// Rank 0's process start to its first training batch.
    pub init_time: f64,
    /// Training loop, its evaluations and checkpoints (rank 0).
    pub raw_train_time: f64,
    pub eval_time: f64,
    pub data_time: f64,
    pub items: f64,
    pub items_unit: String,
    pub steps: f64,
    /// items / e2e_time.
    pub p_whole: f64,
    /// items / (raw_train_time − eval_time).
    pub p_train: f64,
    /// items / (raw_train_time − eval_time − data_time).
    pub p_core: f64,
    pub converged: bool,
    pub eval_metric: String,
    pub final_accuracy: Option<f64>,
    pub final_loss: Option<f64>,
    pub target_acc: Option<f64>,
    pub target_loss: Option<f64>,
    pub mem_used: Option<f64>,
    pub mem_total: Option<f64>,
    /// `device` (reported by the device) or `host_rss_peak` (rank 0's peak RSS, CPU).
    pub mem_kind: Option<String>,
    pub num_params: Option<f64>,
    pub flops_per_item: Option<f64>,
    /// Model FLOPs utilisation, % (transformer cases).
    pub mfu: Option<f64>,
    pub mfu_peak: Option<Peak>,
    /// Why no MFU is given for a transformer case.
    pub mfu_refused: Option<String>,
}

/// Why a round's figures cannot be trusted.
pub type Invalid = String;

/// Build finished_info from the bench's wall time `e2e` and the run's log; checks FlagPerf's
/// invariants (e2e_time > raw_train_time > 0, p_core ≥ p_train ≥ p_whole).
pub fn finished_info(
    case: &Resolved,
    round: usize,
    e2e: f64,
    log: &LogFacts,
) -> Result<FinishedInfo, Invalid> {
    let Some(fin) = log.events.get("FINISHED") else {
        let seen: Vec<&str> = log.events.keys().map(String::as_str).collect();
        return Err(format!(
            "the run logged no FINISHED driver event (events seen: {}); it did not finish training",
            if seen.is_empty() {
                "none".into()
            } else {
                seen.join(", ")
            }
        ));
    };
    let need = |k: &str| -> Result<f64, Invalid> {
        fin.get(k)
            .copied()
            .filter(|v| v.is_finite())
            .ok_or_else(|| format!("the FINISHED event has no finite `{k}`"))
    };
    let (raw, eval, data, items) = (
        need("raw_train_time")?,
        need("eval_time")?,
        need("data_time")?,
        need("items")?,
    );
    let init = need("init_time")?;
    let world = fin.get("world_size").copied().unwrap_or(1.0);
    if world as usize != case.key.world_size() {
        return Err(format!(
            "the run trained on {world} process(es), the case asks for {}",
            case.key.world_size()
        ));
    }
    let key = &case.key;
    let base = &case.base;
    let final_value = log.last.get(&base.eval_metric).copied();
    let converged = match (final_value, base.target_acc, base.target_loss) {
        (Some(v), Some(t), _) => v >= t,
        (Some(v), None, Some(t)) => v <= t,
        _ => false,
    };
    let is_acc = base.target_acc.is_some();
    let (mem_used, mem_total, mem_kind) = match (
        fin.get("device_mem_used"),
        fin.get("device_mem_total"),
        fin.get("host_rss_peak"),
    ) {
        (Some(u), Some(t), _) => (Some(*u), Some(*t), Some("device".to_string())),
        (_, _, Some(r)) => (
            Some(*r),
            fin.get("host_mem_total").copied(),
            Some("host_rss_peak".to_string()),
        ),
        _ => (None, None, None),
    };
    let train_secs = raw - eval;
    let core_secs = train_secs - data;
    let info = FinishedInfo {
        case: key.case_name(),
        round,
        emulated: false,
        model: key.model.clone(),
        framework: key.framework.clone(),
        hardware: key.hardware.clone(),
        vendor: case.hardware.vendor.clone(),
        nnodes: key.nnodes,
        nproc: key.nproc,
        world_size: key.world_size(),
        precision: case.precision(),
        global_batch: log.parameters.get("global_batch_size").copied(),
        e2e_time: e2e,
        init_time: init,
        raw_train_time: raw,
        eval_time: eval,
        data_time: data,
        items,
        items_unit: base.items.clone(),
        steps: fin.get("steps").copied().unwrap_or(0.0),
        p_whole: items / e2e,
        p_train: items / train_secs,
        p_core: items / core_secs,
        converged,
        eval_metric: base.eval_metric.clone(),
        final_accuracy: final_value.filter(|_| is_acc),
        final_loss: final_value.filter(|_| !is_acc),
        target_acc: base.target_acc,
        target_loss: base.target_loss,
        mem_used,
        mem_total,
        mem_kind,
        num_params: fin.get("num_params").copied(),
        flops_per_item: fin.get("flops_per_item").copied(),
        mfu: None,
        mfu_peak: None,
        mfu_refused: None,
    };
    check_invariants(&info)?;
    Ok(if base.transformer {
        with_mfu(info, case, fin.get("peak_flops").copied())
    } else {
        info
    })
}

/// FlagPerf's invariants: e2e_time > raw_train_time > 0, p_core ≥ p_train ≥ p_whole > 0,
/// every figure finite.
pub fn check_invariants(i: &FinishedInfo) -> Result<(), Invalid> {
    let figures = [
        ("e2e_time", i.e2e_time),
        ("raw_train_time", i.raw_train_time),
        ("p_whole", i.p_whole),
        ("p_train", i.p_train),
        ("p_core", i.p_core),
    ];
    if let Some((k, v)) = figures.iter().find(|(_, v)| !v.is_finite()) {
        return Err(format!("{k} = {v} is not finite"));
    }
    if !(i.raw_train_time > 0.0 && i.e2e_time > i.raw_train_time) {
        return Err(format!(
            "invariant e2e_time > raw_train_time > 0 broken: e2e_time {:.3} s, raw_train_time {:.3} s",
            i.e2e_time, i.raw_train_time
        ));
    }
    if !(i.p_whole > 0.0 && i.p_core >= i.p_train && i.p_train >= i.p_whole) {
        return Err(format!(
            "invariant p_core ≥ p_train ≥ p_whole > 0 broken: p_core {:.3}, p_train {:.3}, p_whole {:.3} (eval_time {:.3} s, data_time {:.3} s)",
            i.p_core, i.p_train, i.p_whole, i.eval_time, i.data_time
        ));
    }
    Ok(())
}

/// MFU = p_train × FLOPs per item / (peak of one device × world size), refused (with the
/// reason) when the model states no FLOP count, the count is below a forward pass over its
/// own parameters (2 FLOPs each: a count for another model), no peak is known, or the result
/// falls outside (0, 100] %.
fn with_mfu(mut info: FinishedInfo, case: &Resolved, measured_peak: Option<f64>) -> FinishedInfo {
    let precision_key = info.precision.trim_start_matches("amp_").to_string();
    let peak = match case.hardware.peak_flops.get(&precision_key) {
        Some(p) => Some(Peak {
            flops: *p,
            source: format!(
                "{} {precision_key} peak from hardware.yaml ({})",
                info.hardware,
                case.hardware
                    .peak_source
                    .as_deref()
                    .unwrap_or("no source given")
            ),
        }),
        None => measured_peak.filter(|p| *p > 0.0).map(|p| Peak {
            flops: p,
            source: format!(
                "measured by the run (fp32 matmul on the device): hardware.yaml has no {precision_key} peak for {}",
                info.hardware
            ),
        }),
    };
    let result = match (info.flops_per_item, info.num_params, &peak) {
        (None, _, _) => Err("the model states no flops_per_item".to_string()),
        (_, _, None) => Err(format!(
            "no {precision_key} peak for {} in hardware.yaml and none measured by the run",
            info.hardware
        )),
        (Some(f), Some(n), _) if f < 2.0 * n => Err(format!(
            "flops_per_item {f:.4e} is below 2 × num_params ({:.4e}), a forward pass alone: the FLOP count belongs to another model",
            2.0 * n
        )),
        (Some(f), _, Some(p)) => {
            let mfu = info.p_train * f / (p.flops * info.world_size as f64) * 100.0;
            if mfu > 0.0 && mfu <= 100.0 {
                Ok(mfu)
            } else {
                Err(format!(
                    "MFU {mfu:.3} % is outside (0, 100]: p_train {:.4e} × {f:.4e} FLOPs/item over {} × {:.4e} FLOP/s ({}) — the FLOP count or the peak is wrong",
                    info.p_train, info.world_size, p.flops, p.source
                ))
            }
        }
    };
    match result {
        Ok(m) => info.mfu = Some(m),
        Err(why) => info.mfu_refused = Some(why),
    }
    info.mfu_peak = peak;
    info
}
