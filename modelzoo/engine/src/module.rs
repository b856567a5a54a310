//! What a model provides to the engine ([`BasicModule`], after FleetX's contract) and where
//! the engine reports ([`MetricSink`]).

use tch::{nn::VarStore, Tensor};

use crate::device::TrainDevice;
use crate::optim::OptimizerConfig;

/// Sums over one validation batch, kept on the device so evaluation never syncs per batch.
pub struct EvalOutput {
    /// Sum of per-sample losses.
    pub loss_sum: Tensor,
    /// Named counts (e.g. `top1` / `top5` correct predictions).
    pub counts: Vec<(&'static str, Tensor)>,
    pub samples: usize,
}

/// Where a logged step stands.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StepInfo {
    pub epoch: u64,
    pub step: u64,
    pub loss: f64,
    pub lr: f64,
    pub ips: f64,
}

/// The FleetX `BasicModule` contract: the model-specific parts of training.
pub trait BasicModule {
    /// What one step consumes (images + labels for ResNet, token windows for GPT); built on
    /// the CPU by a [`crate::BatchSource`], moved to the device by [`Self::pretreating_batch`].
    type Batch;
    /// The model's variables (built on the CPU; the engine moves them to the device).
    fn var_store(&self) -> &VarStore;
    fn var_store_mut(&mut self) -> &mut VarStore;
    /// Prepare a CPU batch for the step: move it to the device, change its layout.
    fn pretreating_batch(&mut self, batch: Self::Batch, device: &dyn TrainDevice) -> Self::Batch;
    /// How many throughput items (`ips_unit`) a batch holds: images, or tokens.
    fn items_in(&self, batch: &Self::Batch) -> usize;
    /// Unit of `train.ips` in the log (`imgs/s`, `tokens/s`).
    fn ips_unit(&self) -> &'static str;
    /// Extra metrics for a logged training step (e.g. `train.mfu`), as (name, value); they are
    /// declared through [`Self::train_metric_meta`].
    fn train_metrics(&mut self, _info: &StepInfo) -> Vec<(String, f64)> {
        Vec::new()
    }
    /// (name, unit, goal) of each extra training metric [`Self::train_metrics`] returns.
    fn train_metric_meta(&self) -> Vec<(&'static str, &'static str, &'static str)> {
        Vec::new()
    }
    /// (name, unit, goal) of each evaluation metric besides `val.loss` that
    /// [`Self::validation_epoch_end`] returns: a model declares its own (`val.top1`, `val.ppl`).
    fn val_metric_meta(&self) -> Vec<(&'static str, &'static str, &'static str)>;
    /// Forward pass in training mode; returns the scalar mean loss of the batch.
    fn training_step(&mut self, batch: &Self::Batch) -> Tensor;
    /// Called after each logged optimizer step.
    fn training_step_end(&mut self, _info: &StepInfo) {}
    /// Called when an epoch's batches are exhausted.
    fn training_epoch_end(&mut self, _epoch: u64) {}
    /// Forward pass in evaluation mode (no grad).
    fn validation_step(&mut self, batch: &Self::Batch) -> EvalOutput;
    /// Called after each validation batch.
    fn validation_step_end(&mut self, _out: &EvalOutput) {}
    /// Turn the summed outputs into metrics: default `val.loss` = mean loss and `val.<count>` =
    /// count / samples × 100.
    fn validation_epoch_end(
        &mut self,
        loss_sum: f64,
        counts: &[(&'static str, f64)],
        samples: usize,
    ) -> Vec<(String, f64)> {
        let n = samples.max(1) as f64;
        let mut m = vec![("val.loss".to_string(), loss_sum / n)];
        m.extend(
            counts
                .iter()
                .map(|(k, v)| (format!("val.{k}"), v / n * 100.0)),
        );
        m
    }
    /// Inference on a batch (eval mode, no grad): returns predictions.
    fn test_step(&mut self, batch: &Self::Batch) -> Tensor;
    /// Called after each prediction batch.
    fn test_step_end(&mut self, _out: &Tensor) {}
    /// Optimizer and schedule, given the run's length.
    fn configure_optimizers(&self, steps_per_epoch: u64, total_steps: u64) -> OptimizerConfig;
    /// What the model states about itself in the `FINISHED` driver event (see
    /// [`crate::driver`]), e.g. `flops_per_item` for MFU.
    fn driver_facts(&self) -> Vec<(&'static str, f64)> {
        Vec::new()
    }
}

/// Where metrics go (the run's dllogger in `run_<model>`; any collector in tests).
pub trait MetricSink {
    /// Declare a metric once before it is logged (unit, goal MINIMIZE/MAXIMIZE, stage).
    fn metadata(&mut self, name: &str, unit: &str, goal: &str, stage: &str);
    /// One line of metrics at (epoch, iteration).
    fn log(&mut self, epoch: u64, iteration: u64, metrics: &[(&str, f64)]);
    /// A FlagPerf driver event (`INIT_START` ... `FINISHED`, see [`crate::driver`]).
    fn event(&mut self, _name: &str, _fields: &[(&str, f64)]) {}
    /// A message the run's log must carry besides the metrics (a resume that changes the
    /// schedule, a checkpoint passed over); also sent to `tracing` by the engine.
    fn info(&mut self, _text: &str) {}
}
