//! The training loop: [`Engine`], what a model gets for its [`BasicModule`].

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use tch::{Kind, Tensor};

use crate::checkpoint::{self, Counters};
use crate::data::{BatchError, BatchSource};
use crate::device::TrainDevice;
use crate::dist::{self, DataParallel};
use crate::driver;
use crate::module::{BasicModule, MetricSink, StepInfo};
use crate::optim::Optimizer;
use crate::scaler::GradScaler;
use crate::settings::{EngineSettings, Precision};
use crate::EngineError;

mod state;

/// How `fit` ended.
#[derive(Debug, Clone, PartialEq)]
pub struct FitSummary {
    pub steps: u64,
    pub epochs_done: u64,
    /// Stopped early by SIGINT/SIGTERM (after saving).
    pub interrupted: bool,
    /// The last evaluation's metrics.
    pub last_eval: Vec<(String, f64)>,
    /// The last checkpoint written.
    pub last_checkpoint: Option<PathBuf>,
    /// Training samples skipped because they failed to load.
    pub skipped_samples: u64,
}

/// Set a flag on SIGINT / SIGTERM; the engine then finishes its step, saves and returns. A
/// second signal while the first is being handled exits at once (status 1).
pub fn install_signal_handlers() -> std::io::Result<Arc<AtomicBool>> {
    let flag = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register_conditional_shutdown(sig, 1, Arc::clone(&flag))?;
    }
    signal_hook::flag::register(signal_hook::consts::SIGINT, Arc::clone(&flag))?;
    signal_hook::flag::register(signal_hook::consts::SIGTERM, Arc::clone(&flag))?;
    Ok(flag)
}

/// The training engine.
pub struct Engine<'d, M: BasicModule> {
    pub module: M,
    device: &'d dyn TrainDevice,
    settings: EngineSettings,
    sink: Box<dyn MetricSink + 'd>,
    stop: Arc<AtomicBool>,
    opt: Option<Optimizer>,
    scaler: Option<GradScaler>,
    counters: Counters,
    /// Named non-trainable variables (BN running stats), saved with checkpoints.
    all_vars: Vec<(String, Tensor)>,
    /// Data parallel: this worker's process group and gradient reducer.
    ddp: Option<DataParallel>,
    /// Optimizer steps of the schedule `fit` runs (saved with checkpoints).
    total_steps: Option<u64>,
    /// `--fixed_batch`: the first batch, on the device, that every step trains on.
    fixed: Option<M::Batch>,
}

/// What `fit` works toward, fixed before its first step.
struct FitPlan {
    /// Micro-batches per optimizer step.
    accumulate: u64,
    steps_per_epoch: u64,
    /// Optimizer steps of the whole run (the schedule's length).
    total: u64,
    /// The epochs end the schedule (not `--step`): what to raise to train further.
    ends_by_epochs: bool,
    /// The step the run starts from (0, or the resumed checkpoint's).
    start_step: u64,
    rank: u64,
}

/// The steps since the last log line: their losses (on the device until logged), the items
/// they trained on and when the window started.
struct LogWindow {
    losses: Vec<Tensor>,
    items: usize,
    start: Instant,
}

impl LogWindow {
    fn new() -> LogWindow {
        LogWindow {
            losses: Vec::new(),
            items: 0,
            start: Instant::now(),
        }
    }
}

impl<'d, M: BasicModule> Engine<'d, M> {
    /// Move the module to `device` and set up the loss scaler; nothing is trained yet.
    pub fn new(
        mut module: M,
        device: &'d dyn TrainDevice,
        settings: EngineSettings,
        sink: Box<dyn MetricSink + 'd>,
    ) -> Result<Self, EngineError> {
        device
            .move_var_store(module.var_store_mut())
            .map_err(|message| EngineError::Device {
                device: device.label(),
                message,
            })?;
        let mut all_vars: Vec<(String, Tensor)> =
            module.var_store().variables().into_iter().collect();
        all_vars.sort_by(|a, b| a.0.cmp(&b.0));
        let scaler = match settings.precision {
            Precision::Amp {
                loss_scale: Some(s),
                ..
            } => Some(GradScaler::new(s, |t| device.to_device(t))),
            _ => None,
        };
        let counters = Counters {
            seed: settings.seed,
            ..Counters::default()
        };
        Ok(Engine {
            module,
            device,
            settings,
            sink,
            stop: Arc::new(AtomicBool::new(false)),
            opt: None,
            scaler,
            counters,
            all_vars,
            ddp: None,
            total_steps: None,
            fixed: None,
        })
    }

    /// Train data-parallel with the other ranks of `ddp`: parameters and buffers start from
    /// rank 0's, gradients are averaged in buckets during backward (c10d's Reducer), logged
    /// loss and throughput are the whole job's, and only rank 0 evaluates and saves.
    pub fn with_data_parallel(mut self, ddp: DataParallel) -> Self {
        self.ddp = Some(ddp);
        self
    }

    /// Whether this process writes checkpoints and evaluation results (rank 0, or no DDP).
    fn is_main(&self) -> bool {
        self.ddp.as_ref().is_none_or(DataParallel::is_main)
    }

    /// Stop cleanly (finish the step, save, return) when `flag` becomes true.
    pub fn with_stop_flag(mut self, flag: Arc<AtomicBool>) -> Self {
        self.stop = flag;
        self
    }

    /// Loop position (steps done, epoch, batch in epoch).
    pub fn counters(&self) -> Counters {
        self.counters
    }

    fn declare_metrics(&mut self) {
        let mut decl = vec![
            ("train.loss", "", "MINIMIZE", "TRAIN"),
            ("train.ips", self.module.ips_unit(), "MAXIMIZE", "TRAIN"),
            ("train.lr", "", "NONE", "TRAIN"),
        ];
        decl.extend(
            self.module
                .train_metric_meta()
                .into_iter()
                .map(|(n, u, g)| (n, u, g, "TRAIN")),
        );
        decl.push(("val.loss", "", "MINIMIZE", "VAL"));
        decl.extend(
            self.module
                .val_metric_meta()
                .into_iter()
                .map(|(n, u, g)| (n, u, g, "VAL")),
        );
        for (name, unit, goal, stage) in decl {
            self.sink.metadata(name, unit, goal, stage);
        }
    }

    fn make_optimizer(&mut self, steps_per_epoch: u64, total: u64) -> Optimizer {
        let cfg = self.module.configure_optimizers(steps_per_epoch, total);
        let named: Vec<(String, Tensor)> = self
            .all_vars
            .iter()
            .filter(|(_, t)| t.requires_grad())
            .map(|(n, t)| (n.clone(), t.shallow_clone()))
            .collect();
        Optimizer::new(named, cfg)
    }

    /// Train on `train` (validating on `val`) per the settings; resumes first when
    /// `settings.resume` is set. Each optimizer step is [`Self::begin_step`], one
    /// [`Self::micro_step`] per micro-batch and the optimizer; then, when due, the log line
    /// ([`Self::log_step`]), a checkpoint and an evaluation.
    pub fn fit(
        &mut self,
        train: &dyn BatchSource<M::Batch>,
        val: Option<&dyn BatchSource<M::Batch>>,
    ) -> Result<FitSummary, EngineError> {
        let plan = self.start_fit(train)?;
        let s = self.settings.clone();
        let (accum, total) = (plan.accumulate, plan.total);
        self.declare_metrics();
        let bar = progress_bar(s.progress, total, self.counters.step);
        let timeline = driver::Timeline::start(&mut *self.sink);
        let mut summary = FitSummary {
            steps: self.counters.step,
            epochs_done: self.counters.epoch,
            interrupted: false,
            last_eval: Vec::new(),
            last_checkpoint: None,
            skipped_samples: 0,
        };
        let mut window = LogWindow::new();
        let mut dumping = None;
        'epochs: while self.counters.epoch < s.num_train_epochs && self.counters.step < total {
            let epoch = self.counters.epoch;
            let batches_this_epoch = (plan.steps_per_epoch * accum) as usize;
            let skip = self.counters.batch_in_epoch as usize;
            let mut micro = 0u64;
            let mut step_loss: Option<Tensor> = None;
            // `None`: train on the batch `--fixed_batch` keeps (the source's first).
            let source: Box<dyn Iterator<Item = Result<Option<M::Batch>, BatchError>>> =
                match (s.fixed_batch, &self.fixed) {
                    (false, _) => Box::new(train.epoch_batches(epoch, skip).map(|b| b.map(Some))),
                    (true, Some(_)) => Box::new(std::iter::repeat_with(|| Ok(None))),
                    (true, None) => Box::new(
                        train
                            .epoch_batches(epoch, skip)
                            .take(1)
                            .map(|b| b.map(Some))
                            .chain(std::iter::repeat_with(|| Ok(None))),
                    ),
                };
            for batch in timeline
                .batches(source)
                .take(batches_this_epoch.saturating_sub(skip))
            {
                let batch = batch.map_err(EngineError::Data)?;
                if micro == 0 {
                    dumping = self.begin_step(plan.rank)?;
                }
                let items = batch
                    .as_ref()
                    .or(self.fixed.as_ref())
                    .map_or(0, |b| self.module.items_in(b));
                window.items += items;
                timeline.add_items(items);
                let loss = self.micro_step(batch, micro + 1 == accum, accum)?;
                step_loss = Some(match step_loss {
                    Some(acc) => acc + loss,
                    None => loss,
                });
                self.counters.batch_in_epoch += 1;
                micro += 1;
                if micro < accum {
                    continue;
                }
                micro = 0;
                dumping.take().map(crate::dump::StepDump::end).transpose()?;
                let lr = self.optimizer_step(total)?;
                self.counters.step += 1;
                let step = self.counters.step;
                if let Some(l) = step_loss.take() {
                    window
                        .losses
                        .push(if accum > 1 { l / accum as f64 } else { l });
                }
                bar.inc(1);
                let last = step >= total;
                if step.is_multiple_of(s.logging_freq) || last {
                    self.log_step(epoch, lr, &mut window, &bar)?;
                }
                let stop = self.stop_agreed()?;
                if s.save_steps.is_some_and(|n| step.is_multiple_of(n)) || stop {
                    self.check_finite(&window.losses, step)?;
                    summary.last_checkpoint = Some(self.save_checkpoint()?);
                }
                if let (Some(val), Some(f), true) = (val, s.eval_freq, self.is_main()) {
                    if step.is_multiple_of(f) && !last {
                        summary.last_eval = timeline.eval(|| self.evaluate(val))?;
                        window.start = Instant::now();
                    }
                }
                if stop {
                    tracing::warn!("interrupted: saved step {step}, stopping");
                    summary.interrupted = true;
                    break 'epochs;
                }
                if last {
                    break;
                }
            }
            self.end_epoch(epoch, batches_this_epoch, total);
            if self.counters.step < total {
                if let (Some(val), None, true) = (val, s.eval_freq, self.is_main()) {
                    summary.last_eval = timeline.eval(|| self.evaluate(val))?;
                }
                window.start = Instant::now();
            }
        }
        bar.finish_and_clear();
        self.finish_fit(train, val, &plan, &timeline, &window, summary)
    }

    /// Everything before the first step: the run's length, the checkpoint directory's checks,
    /// the optimizer, resuming, joining the data-parallel group and the dump's checks.
    fn start_fit(&mut self, train: &dyn BatchSource<M::Batch>) -> Result<FitPlan, EngineError> {
        let s = self.settings.clone();
        let accumulate = s.accumulate_steps.max(1);
        let steps_per_epoch = train.batches_per_epoch() as u64 / accumulate;
        if steps_per_epoch == 0 {
            return Err(EngineError::NoData {
                batches: train.batches_per_epoch(),
                accumulate,
            });
        }
        let by_epochs = steps_per_epoch * s.num_train_epochs;
        let total = s.max_steps.map_or(by_epochs, |m| by_epochs.min(m));
        // A run that does not resume never writes into another run's checkpoints.
        checkpoint::check_unused(&s.ckpt_dir, s.resume.is_some())?;
        if self.is_main() {
            checkpoint::remove_stale_temp_files(&s.ckpt_dir)?;
        }
        let opt = self.make_optimizer(steps_per_epoch, total);
        self.opt = Some(opt);
        self.total_steps = Some(total);
        if let Some(r) = &s.resume {
            let restored = self
                .restore(r)
                .map_err(|e| EngineError::Resume(Box::new(e)))?;
            checkpoint::check_continues(
                &s.ckpt_dir,
                &restored.file,
                self.counters.step,
                &restored.unreadable,
            )?;
            if let Some(prev) = restored.total_steps.filter(|p| *p != total) {
                self.note_schedule_change(steps_per_epoch, prev, total);
            }
        }
        let start_step = self.counters.step;
        let ends_by_epochs = s.max_steps.is_none_or(|m| m >= by_epochs);
        if start_step >= total {
            // Resumed at the end of the schedule: refused before anything is logged.
            return Err(EngineError::NothingTrained {
                step: start_step,
                total,
                ends_by_epochs,
                skipped: 0,
                first_skip: None,
            });
        }
        if let Some(ddp) = self.ddp.as_mut() {
            let trainable: Vec<(String, Tensor)> = self
                .all_vars
                .iter()
                .filter(|(_, t)| t.requires_grad())
                .map(|(n, t)| (n.clone(), t.shallow_clone()))
                .collect();
            ddp.start(&self.all_vars, &trainable)?;
        }
        let rank = self.ddp.as_ref().map_or(0, |d| d.world.rank as u64);
        crate::dump::check(&s.dump, rank as u32, start_step, total)?;
        Ok(FitPlan {
            accumulate,
            steps_per_epoch,
            total,
            ends_by_epochs,
            start_step,
            rank,
        })
    }

    /// The start of an optimizer step: reseed the random ops from (seed, step, rank), so a
    /// resumed run draws what the uninterrupted one did and each rank its own dropout; and
    /// start the step's dump when it is the one asked for.
    fn begin_step(&mut self, rank: u64) -> Result<Option<crate::dump::StepDump>, EngineError> {
        let s = &self.settings;
        let step = self.counters.step;
        self.device.manual_seed(
            s.seed
                .wrapping_add(step.wrapping_mul(1_000_003))
                .wrapping_add(rank.wrapping_mul(0x9E37_79B9)),
        );
        crate::dump::begin_if_due(&s.dump, step + 1, rank as u32, self.device, &self.all_vars)
    }

    /// One micro-batch: to the device, forward (under autocast with AMP), backward of the loss
    /// divided over the `accum` micro-batches of the step (and scaled for fp16). `sync` marks
    /// the step's last micro-batch, where data parallel averages the gradients. Returns the
    /// loss, detached (read from the device only when it is logged). `None` trains on the
    /// batch `--fixed_batch` keeps.
    fn micro_step(
        &mut self,
        batch: Option<M::Batch>,
        sync: bool,
        accum: u64,
    ) -> Result<Tensor, EngineError> {
        if let (Some(ddp), true) = (self.ddp.as_mut(), sync) {
            ddp.before_forward()?;
        }
        let batch = match batch {
            Some(b) => self.module.pretreating_batch(b, self.device),
            None => self
                .fixed
                .take()
                .ok_or_else(|| EngineError::Settings("--fixed_batch: no batch kept".into()))?,
        };
        let (amp, dtype) = match self.settings.precision {
            Precision::Fp32 => (false, Kind::Float),
            Precision::Amp { dtype, .. } => (true, dtype),
        };
        let module = &mut self.module;
        let loss = self
            .device
            .autocast_with(amp, dtype, &mut || module.training_step(&batch));
        let loss = crate::dump::at_least_f32(&loss);
        if let (Some(ddp), true) = (self.ddp.as_mut(), sync) {
            ddp.before_backward()?;
        }
        let scaled = if accum > 1 {
            &loss / accum as f64
        } else {
            loss.shallow_clone()
        };
        match &self.scaler {
            Some(sc) => sc.scale_loss(&scaled).backward(),
            None => scaled.backward(),
        }
        if self.settings.fixed_batch {
            self.fixed = Some(batch);
        }
        Ok(loss.detach())
    }

    /// The log line of the step just taken: its loss (the window's losses checked finite
    /// first), the window's throughput, the learning rate and the module's own metrics, all
    /// job-wide under data parallel. Starts a new window.
    fn log_step(
        &mut self,
        epoch: u64,
        lr: f64,
        window: &mut LogWindow,
        bar: &ProgressBar,
    ) -> Result<(), EngineError> {
        let step = self.counters.step;
        self.check_finite(&window.losses, step)?;
        self.device.synchronize();
        let secs = window.start.elapsed().as_secs_f64().max(1e-9);
        let loss = window
            .losses
            .last()
            .map(|t| t.double_value(&[]))
            .unwrap_or(f64::NAN);
        let (loss, ips) = self.job_wide(loss, window.items as f64 / secs)?;
        let info = StepInfo {
            epoch,
            step,
            loss,
            lr,
            ips,
        };
        let extra = self.module.train_metrics(&info);
        let mut line: Vec<(&str, f64)> = vec![
            ("rank", self.settings.rank as f64),
            ("train.loss", loss),
            ("train.ips", ips),
            ("train.lr", lr),
        ];
        line.extend(extra.iter().map(|(k, v)| (k.as_str(), *v)));
        self.sink.log(epoch, step, &line);
        bar.set_message(format!(
            "loss {loss:.4} {ips:.1} {}",
            self.module.ips_unit()
        ));
        self.module.training_step_end(&info);
        *window = LogWindow::new();
        Ok(())
    }

    /// After an epoch's batches: the next epoch starts when this one was whole, or when the
    /// loader ran dry early (every sample of the rest failed to load) before the last step.
    fn end_epoch(&mut self, epoch: u64, batches_this_epoch: usize, total: u64) {
        let _ = self.opt.as_mut().map(Optimizer::zero_grad);
        let whole = self.counters.batch_in_epoch as usize >= batches_this_epoch;
        if whole {
            self.module.training_epoch_end(epoch);
        }
        if whole || self.counters.step < total {
            self.counters.epoch += 1;
            self.counters.batch_in_epoch = 0;
        }
    }

    /// The end of a run that trained: the last checkpoint and evaluation, the driver's
    /// `FINISHED` event, and under data parallel each rank's parameters fingerprint.
    fn finish_fit(
        &mut self,
        train: &dyn BatchSource<M::Batch>,
        val: Option<&dyn BatchSource<M::Batch>>,
        plan: &FitPlan,
        timeline: &driver::Timeline,
        window: &LogWindow,
        mut summary: FitSummary,
    ) -> Result<FitSummary, EngineError> {
        if !summary.interrupted && self.counters.step == plan.start_step {
            // Never "done" for nothing: no step means every batch failed to load, or the
            // resumed run had already reached its last step.
            return Err(EngineError::NothingTrained {
                step: self.counters.step,
                total: plan.total,
                ends_by_epochs: plan.ends_by_epochs,
                skipped: train.skipped(),
                first_skip: train.first_skip(),
            });
        }
        if !summary.interrupted {
            self.check_finite(&window.losses, self.counters.step)?;
            if summary.last_checkpoint.as_ref()
                != Some(&checkpoint::path_for(
                    &self.settings.ckpt_dir,
                    self.counters.step,
                ))
            {
                summary.last_checkpoint = Some(self.save_checkpoint()?);
            }
            if let (Some(val), true) = (val, self.is_main()) {
                summary.last_eval = timeline.eval(|| self.evaluate(val))?;
            }
            let world = self.ddp.as_ref().map_or(1, |d| d.world.world_size);
            let facts = driver::Facts::of_run(world, self.counters.step, &self.all_vars);
            let facts = driver::Facts {
                model: self.module.driver_facts(),
                ..facts
            };
            timeline.finish(&mut *self.sink, &facts, self.device.memory_info());
        }
        if let Some(ddp) = &self.ddp {
            let dev = self.device;
            // Buffers (BN statistics) move on with each rank's last forward; parameters agree.
            let cpu: Vec<(String, Tensor)> = self
                .all_vars
                .iter()
                .filter(|(_, t)| t.requires_grad())
                .map(|(n, t)| (n.clone(), dev.to_cpu(t)))
                .collect();
            tracing::info!(
                "rank {}: parameters fingerprint {} after {} steps",
                ddp.world.rank,
                dist::fingerprint(&cpu),
                self.counters.step
            );
        }
        summary.steps = self.counters.step;
        summary.epochs_done = self.counters.epoch;
        summary.skipped_samples = train.skipped();
        Ok(summary)
    }

    /// Say (tracing warning and the metric log) that a resumed run's schedule is `total` steps
    /// long where the checkpoint was trained toward `prev`, and whether the steps already done
    /// ran at other learning rates than a `total`-step run's (so the run cannot match one).
    fn note_schedule_change(&mut self, steps_per_epoch: u64, prev: u64, total: u64) {
        let step = self.counters.step;
        let now = self.module.configure_optimizers(steps_per_epoch, total);
        let then = self.module.configure_optimizers(steps_per_epoch, prev);
        let lr_differed = (0..step)
            .any(|k| now.schedule.lr_at(now.lr, k, total) != then.schedule.lr_at(then.lr, k, prev));
        let consequence = if lr_differed {
            format!(
                "its {step} steps so far ran at the learning rates of the {prev}-step schedule, \
                 so the losses from here will not match an uninterrupted {total}-step run"
            )
        } else {
            "this learning-rate schedule does not depend on the run's length: only where the \
             run stops changes"
                .to_string()
        };
        let msg = format!(
            "resuming at step {step}: the checkpoint was trained toward a {prev}-step schedule, \
             this run's is {total} steps (--step / --epoch changed); {consequence}"
        );
        tracing::warn!("{msg}");
        self.sink.info(&format!("WARNING: {msg}"));
    }

    /// The logged step loss and throughput of the whole job: the mean loss over the ranks and
    /// the sum of their items/s (as they are without DDP).
    fn job_wide(&self, loss: f64, ips: f64) -> Result<(f64, f64), EngineError> {
        let Some(ddp) = &self.ddp else {
            return Ok((loss, ips));
        };
        let t = self.device.to_device(&Tensor::from_slice(&[loss, ips]));
        ddp.sum(&t)?;
        let v: Vec<f64> = Vec::try_from(self.device.to_cpu(&t)).unwrap_or_default();
        let world = ddp.world.world_size as f64;
        Ok((
            v.first().map_or(f64::NAN, |l| l / world),
            v.get(1).copied().unwrap_or(ips),
        ))
    }

    /// Whether to stop after this step: this process was signalled, or (data parallel) any
    /// rank was — agreed by all, so every rank stops after the same step.
    fn stop_agreed(&self) -> Result<bool, EngineError> {
        let local = self.stop.load(Ordering::SeqCst);
        let Some(ddp) = &self.ddp else {
            return Ok(local);
        };
        if local {
            // Before the collective, so the key is set before any rank can exit.
            ddp.note_interrupted();
        }
        let t = self
            .device
            .to_device(&Tensor::from_slice(&[f32::from(u8::from(local))]));
        ddp.sum(&t)?;
        Ok(self.device.to_cpu(&t).double_value(&[0]) > 0.0)
    }

    fn check_finite(&self, window: &[Tensor], step: u64) -> Result<(), EngineError> {
        if window.is_empty() {
            return Ok(());
        }
        let stacked = Tensor::stack(window, 0);
        if stacked.isfinite().all().int64_value(&[]) == 1 {
            return Ok(());
        }
        let values: Vec<f64> = Vec::try_from(stacked.to_kind(Kind::Double)).unwrap_or_default();
        let first = values.iter().position(|v| !v.is_finite()).unwrap_or(0);
        let value = values.get(first).copied().unwrap_or(f64::NAN);
        Err(EngineError::NonFiniteLoss {
            step: step + 1 + first as u64 - window.len() as u64,
            value,
            ckpt_dir: self.settings.ckpt_dir.clone(),
        })
    }

    /// Unscale, clip, skip-on-overflow, step, update the scale; returns the LR used.
    fn optimizer_step(&mut self, total: u64) -> Result<f64, EngineError> {
        let Some(opt) = self.opt.as_mut() else {
            return Err(EngineError::Settings("fit() not started".into()));
        };
        let cfg = opt.config.clone();
        let lr = cfg.schedule.lr_at(cfg.lr, self.counters.step, total);
        let grads = opt.grads();
        let step = self.counters.step + 1;
        let op_failed = |source| EngineError::OptimizerStep { step, source };
        // torch.amp.GradScaler's order: unscale, clip, then skip the step on inf/NaN.
        let found_inf = match &self.scaler {
            Some(sc) if !grads.is_empty() => Some(sc.unscale(&grads).map_err(op_failed)?),
            _ => None,
        };
        if let (Some(max), false) = (cfg.clip_grad_norm, grads.is_empty()) {
            let total_norm = device_sdaa::optim::grad_norm(&grads).map_err(op_failed)?;
            let coef = ((total_norm + 1e-6).reciprocal() * max).clamp_max(1.0);
            device_sdaa::optim::mul_(&grads, &coef).map_err(op_failed)?;
        }
        let mut do_step = true;
        if let (Some(sc), Some(found_inf)) = (self.scaler.as_mut(), &found_inf) {
            sc.update(found_inf);
            do_step = found_inf.double_value(&[0]) == 0.0;
            if !do_step {
                tracing::info!("fp16 overflow at step {step}: step skipped, loss scale lowered");
            }
        }
        if do_step {
            opt.step(lr).map_err(op_failed)?;
        }
        opt.zero_grad();
        Ok(lr)
    }

    /// Evaluate on `val` (at most `eval_iters` batches) and log `val.*` metrics.
    pub fn evaluate(
        &mut self,
        val: &dyn BatchSource<M::Batch>,
    ) -> Result<Vec<(String, f64)>, EngineError> {
        let limit = self
            .settings
            .eval_iters
            .map(|n| n as usize)
            .unwrap_or(usize::MAX);
        let mut loss_sum: Option<Tensor> = None;
        let mut counts: Vec<(&'static str, Tensor)> = Vec::new();
        let mut samples = 0usize;
        let (amp, dtype) = match self.settings.precision {
            Precision::Fp32 => (false, Kind::Float),
            Precision::Amp { dtype, .. } => (true, dtype),
        };
        for batch in val.epoch_batches(0, 0).take(limit) {
            let batch = self
                .module
                .pretreating_batch(batch.map_err(EngineError::Data)?, self.device);
            let module = &mut self.module;
            let mut out_slot = None;
            let _loss = tch::no_grad(|| {
                let mut f = || {
                    let out = module.validation_step(&batch);
                    let l = out.loss_sum.shallow_clone();
                    out_slot = Some(out);
                    l
                };
                self.device.autocast_with(amp, dtype, &mut f)
            });
            let Some(out) = out_slot else { continue };
            self.module.validation_step_end(&out);
            samples += out.samples;
            let l = out.loss_sum.to_kind(Kind::Double);
            loss_sum = Some(match loss_sum {
                Some(acc) => acc + l,
                None => l,
            });
            if counts.is_empty() {
                counts = out
                    .counts
                    .iter()
                    .map(|(k, t)| (*k, t.to_kind(Kind::Double)))
                    .collect();
            } else {
                for ((_, acc), (_, t)) in counts.iter_mut().zip(&out.counts) {
                    *acc = &*acc + t.to_kind(Kind::Double);
                }
            }
        }
        // A validation set that yielded nothing (every sample unreadable, or empty) has no
        // figures: logging NaN and carrying on would pass a run that validated nothing.
        let Some(loss_sum) = loss_sum.filter(|_| samples > 0) else {
            return Err(EngineError::NothingEvaluated {
                skipped: val.skipped(),
                first_skip: val.first_skip(),
            });
        };
        let loss_sum = loss_sum.double_value(&[]);
        let counts: Vec<(&'static str, f64)> = counts
            .iter()
            .map(|(k, t)| (*k, t.double_value(&[])))
            .collect();
        let metrics = self.module.validation_epoch_end(loss_sum, &counts, samples);
        let mut line: Vec<(&str, f64)> = vec![("rank", self.settings.rank as f64)];
        line.extend(metrics.iter().map(|(k, v)| (k.as_str(), *v)));
        self.sink
            .log(self.counters.epoch, self.counters.step, &line);
        // Logged first (the log shows what was evaluated), then the run stops: a NaN
        // validation loss is never reported as success.
        if !loss_sum.is_finite() {
            return Err(EngineError::NonFiniteEval {
                step: self.counters.step,
                value: loss_sum / samples.max(1) as f64,
                ckpt_dir: self.settings.ckpt_dir.clone(),
            });
        }
        Ok(metrics)
    }

    /// Predictions for every batch of `data` (eval mode, no grad), on the CPU; the first batch
    /// `data` cannot produce is the error.
    pub fn predict(
        &mut self,
        data: &dyn BatchSource<M::Batch>,
    ) -> Result<Vec<Tensor>, EngineError> {
        let mut out = Vec::new();
        for batch in data.epoch_batches(0, 0) {
            let batch = self
                .module
                .pretreating_batch(batch.map_err(EngineError::Data)?, self.device);
            let pred = tch::no_grad(|| self.module.test_step(&batch));
            self.module.test_step_end(&pred);
            out.push(self.device.to_cpu(&pred));
        }
        Ok(out)
    }
}

fn progress_bar(enabled: bool, total: u64, done: u64) -> ProgressBar {
    if !enabled || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
    if let Ok(style) =
        ProgressStyle::with_template("{bar:30} {pos}/{len} steps {elapsed_precise} {msg}")
    {
        bar.set_style(style);
    }
    bar.set_position(done);
    bar
}
