//! FlagPerf's driver events and the timing split behind its `finished_info`.
//!
//! [`crate::Engine::fit`] emits, through [`crate::MetricSink::event`] (dllogger records whose
//! step is the event name in `run_<model>`):
//!
//! | event | when | fields |
//! |---|---|---|
//! | `INIT_START` | the process started (from `/proc/self/stat`) | `time` |
//! | `INIT_END` | the loop is about to take its first batch | `time`, `init_time` |
//! | `TRAIN_START` | same moment | `time` |
//! | `TRAIN_END` | training, its evaluations and its last checkpoint are done | `time`, `raw_train_time`, `eval_time`, `data_time` |
//! | `FINISHED` | right after | the figures `modelzoo bench` turns into `finished_info` |
//!
//! `time` is Unix seconds. `eval_time` is the time spent evaluating inside the training
//! window, `data_time` the time the loop waited for its next batch (data IO), so
//! `raw_train_time − eval_time` is what FlagPerf's `p_train` divides by and
//! `raw_train_time − eval_time − data_time` what `p_core` divides by.

use std::cell::Cell;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::MetricSink;

/// The event names, in the order they are emitted.
pub const EVENTS: [&str; 5] = [
    "INIT_START",
    "INIT_END",
    "TRAIN_START",
    "TRAIN_END",
    "FINISHED",
];

/// Facts about the finished run that the loop itself does not measure.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Facts {
    /// Processes in the data-parallel job (1 without DDP).
    pub world_size: usize,
    /// Optimizer steps taken.
    pub steps: u64,
    /// Trainable parameters of the model.
    pub num_params: u64,
    /// What the model states about itself ([`crate::BasicModule::driver_facts`], e.g.
    /// `flops_per_item`).
    pub model: Vec<(&'static str, f64)>,
}

impl Facts {
    /// The facts of a run of `steps` steps on `world_size` processes over the model's
    /// variables `vars` (only those that train are counted); no model facts yet.
    pub fn of_run(world_size: usize, steps: u64, vars: &[(String, tch::Tensor)]) -> Facts {
        Facts {
            world_size,
            steps,
            num_params: vars
                .iter()
                .filter(|(_, t)| t.requires_grad())
                .map(|(_, t)| t.numel() as u64)
                .sum(),
            model: Vec::new(),
        }
    }
}

/// Times one training run: created when the loop starts, finished when it ends.
pub struct Timeline {
    init_start_unix: f64,
    init: f64,
    train_start: Instant,
    eval: Cell<Duration>,
    data: Cell<Duration>,
    items: Cell<u64>,
}

fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// How long this process has existed: `/proc/self/stat`'s start time (clock ticks after
/// boot) against `/proc/uptime`. `None` where /proc cannot say.
pub fn process_age() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The command name (field 2) may hold spaces: fields are counted after its ')'.
    let after = &stat[stat.rfind(')')? + 1..];
    // Field 22 (starttime) is the 20th after the name.
    let start_ticks: f64 = after.split_whitespace().nth(19)?.parse().ok()?;
    let uptime: f64 = std::fs::read_to_string("/proc/uptime")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    // SAFETY: sysconf has no preconditions.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if ticks <= 0 {
        return None;
    }
    let age = uptime - start_ticks / ticks as f64;
    (age >= 0.0).then(|| Duration::from_secs_f64(age))
}

impl Timeline {
    /// Initialisation is over, training starts now: emits `INIT_START` (when the process
    /// started), `INIT_END` and `TRAIN_START`.
    pub fn start(sink: &mut dyn MetricSink) -> Timeline {
        let now = unix_now();
        let init = process_age().map_or(0.0, |d| d.as_secs_f64());
        let init_start_unix = now - init;
        sink.event("INIT_START", &[("time", init_start_unix)]);
        sink.event("INIT_END", &[("time", now), ("init_time", init)]);
        sink.event("TRAIN_START", &[("time", now)]);
        Timeline {
            init_start_unix,
            init,
            train_start: Instant::now(),
            eval: Cell::new(Duration::ZERO),
            data: Cell::new(Duration::ZERO),
            items: Cell::new(0),
        }
    }

    /// `batches`, with the time spent waiting for each one added to the data time.
    pub fn batches<'a, I: Iterator + 'a>(
        &'a self,
        batches: I,
    ) -> impl Iterator<Item = I::Item> + 'a {
        let mut inner = batches;
        std::iter::from_fn(move || {
            let t = Instant::now();
            let next = inner.next();
            self.data.set(self.data.get() + t.elapsed());
            next
        })
    }

    /// Count `n` throughput items (images, tokens) of this process.
    pub fn add_items(&self, n: usize) {
        self.items.set(self.items.get() + n as u64);
    }

    /// Run an evaluation, its time counted as evaluation time.
    pub fn eval<T>(&self, f: impl FnOnce() -> T) -> T {
        let t = Instant::now();
        let out = f();
        self.eval.set(self.eval.get() + t.elapsed());
        out
    }

    /// Training is over: emits `TRAIN_END` and `FINISHED`. `FINISHED` carries `e2e_time`
    /// (process start to now), `init_time`, `raw_train_time`, `eval_time`, `data_time`,
    /// `items` (the whole job's: this process's × world size, ranks train equal shards),
    /// `world_size`, `steps`, `num_params`, the model's facts and the memory figures of
    /// [`memory_fields`] (`device_memory`: free and total bytes, where the device says).
    pub fn finish(
        &self,
        sink: &mut dyn MetricSink,
        facts: &Facts,
        device_memory: Option<(u64, u64)>,
    ) {
        let now = unix_now();
        let raw = self.train_start.elapsed().as_secs_f64();
        let eval = self.eval.get().as_secs_f64();
        let data = self.data.get().as_secs_f64();
        sink.event(
            "TRAIN_END",
            &[
                ("time", now),
                ("raw_train_time", raw),
                ("eval_time", eval),
                ("data_time", data),
            ],
        );
        let world = facts.world_size.max(1);
        let mut fields: Vec<(&str, f64)> = vec![
            ("time", now),
            ("e2e_time", now - self.init_start_unix),
            ("init_time", self.init),
            ("raw_train_time", raw),
            ("eval_time", eval),
            ("data_time", data),
            ("items", (self.items.get() * world as u64) as f64),
            ("world_size", world as f64),
            ("steps", facts.steps as f64),
            ("num_params", facts.num_params as f64),
        ];
        fields.extend(facts.model.iter().copied());
        fields.extend(memory_fields(device_memory));
        sink.event("FINISHED", &fields);
    }
}

/// Memory figures for `FINISHED`: `device_mem_used` / `device_mem_total` (bytes) when the
/// device reports its memory (`free`, `total`), else this process's peak resident set
/// `host_rss_peak` and the machine's `host_mem_total` (bytes, from /proc).
pub fn memory_fields(device: Option<(u64, u64)>) -> Vec<(&'static str, f64)> {
    if let Some((free, total)) = device {
        return vec![
            ("device_mem_used", total.saturating_sub(free) as f64),
            ("device_mem_total", total as f64),
        ];
    }
    let kib = |file: &str, key: &str| -> Option<f64> {
        let text = std::fs::read_to_string(file).ok()?;
        let line = text.lines().find(|l| l.starts_with(key))?;
        let v: f64 = line[key.len()..].split_whitespace().next()?.parse().ok()?;
        Some(v * 1024.0)
    };
    let mut out = Vec::new();
    if let Some(rss) = kib("/proc/self/status", "VmHWM:") {
        out.push(("host_rss_peak", rss));
    }
    if let Some(total) = kib("/proc/meminfo", "MemTotal:") {
        out.push(("host_mem_total", total));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_has_an_age_and_a_peak_rss() {
        let age = process_age().expect("/proc/self/stat on Linux");
        assert!(age < Duration::from_secs(24 * 3600), "{age:?}");
        let mem = memory_fields(None);
        let rss = mem.iter().find(|(k, _)| *k == "host_rss_peak").unwrap().1;
        let total = mem.iter().find(|(k, _)| *k == "host_mem_total").unwrap().1;
        assert!(rss > 0.0 && rss < total, "{mem:?}");
        assert_eq!(
            memory_fields(Some((1, 3))),
            vec![("device_mem_used", 2.0), ("device_mem_total", 3.0)]
        );
    }
}
