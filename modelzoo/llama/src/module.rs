//! LLaMA as an engine [`BasicModule`]: next-token cross entropy, AdamW with FleetX's cosine
//! schedule, throughput in tokens/s, `train.mfu`, and `val.loss` / `val.ppl`, on the token
//! batches of `modelzoo-text` — the same metrics as run_gpt.

use modelzoo_engine::{Algorithm, BasicModule, EvalOutput, OptimizerConfig, StepInfo, TrainDevice};
use modelzoo_text::TokenBatch;
use tch::nn::VarStore;
use tch::{Device, Tensor};

/// The device peak `train.mfu` is measured against (shared with run_gpt).
pub use modelzoo_text::mfu::peak_flops;

use crate::config::{Model, Optimizer};
use crate::model::Llama;

/// A LLaMA and its training recipe.
pub struct LlamaModule {
    vs: VarStore,
    model: Llama,
    optimizer: Optimizer,
    flops_per_token: f64,
    /// FLOP/s the MFU is measured against (see [`peak_flops`]).
    peak_flops: f64,
}

impl LlamaModule {
    /// Build on the CPU with `seed`-determined initial weights. `seq_len` is the training
    /// sequence length (for the FLOPs per token); `peak_flops` the device's peak for MFU.
    pub fn new(
        model: &Model,
        optimizer: Optimizer,
        seq_len: i64,
        peak_flops: f64,
        seed: u64,
    ) -> LlamaModule {
        tch::manual_seed(seed as i64);
        let vs = VarStore::new(Device::Cpu);
        let net = Llama::new(&vs.root(), model);
        let flops_per_token = net.train_flops_per_token(seq_len);
        LlamaModule {
            vs,
            model: net,
            optimizer,
            flops_per_token,
            peak_flops,
        }
    }

    /// The network (tests compare it with references).
    pub fn model(&self) -> &Llama {
        &self.model
    }

    /// Starts from a Hugging Face `LlamaForCausalLM` state dict instead of the random
    /// initialisation (see [`crate::pretrained::load`]).
    pub fn load_pretrained(
        &self,
        path: &std::path::Path,
    ) -> Result<(), crate::pretrained::PretrainedError> {
        crate::pretrained::load(&self.vs, path, self.model.config().tie_word_embeddings)
    }

    /// Training FLOPs per token (6·N + attention), as used for `train.mfu`.
    pub fn flops_per_token(&self) -> f64 {
        self.flops_per_token
    }

    fn logits(&self, input: &Tensor, train: bool) -> Tensor {
        // Shapes and ids are checked when batches are built and the config is validated
        // (seq_len <= max_position_embeddings), so forward cannot reject its input here; a
        // failure (a bug, or a libtorch error inside a recomputed layer) is reported by the
        // caller's libtorch-panic handler.
        match self.model.forward(input, None, train) {
            Ok(l) => l,
            Err(e) => panic!("LLaMA forward failed on a batch built by run_llama: {e}"),
        }
    }
}

impl BasicModule for LlamaModule {
    type Batch = TokenBatch;
    fn var_store(&self) -> &VarStore {
        &self.vs
    }
    fn var_store_mut(&mut self) -> &mut VarStore {
        &mut self.vs
    }
    fn pretreating_batch(&mut self, batch: TokenBatch, device: &dyn TrainDevice) -> TokenBatch {
        TokenBatch {
            input: device.to_device(&batch.input),
            labels: device.to_device(&batch.labels),
        }
    }
    fn items_in(&self, batch: &TokenBatch) -> usize {
        batch.input.numel()
    }
    fn ips_unit(&self) -> &'static str {
        "tokens/s"
    }
    fn train_metric_meta(&self) -> Vec<(&'static str, &'static str, &'static str)> {
        vec![("train.mfu", "%", "MAXIMIZE")]
    }
    fn train_metrics(&mut self, info: &StepInfo) -> Vec<(String, f64)> {
        let mfu = info.ips * self.flops_per_token / self.peak_flops.max(1.0) * 100.0;
        vec![("train.mfu".to_string(), mfu)]
    }
    /// For `modelzoo bench`'s MFU: the training FLOPs per token and the peak `train.mfu` uses.
    fn driver_facts(&self) -> Vec<(&'static str, f64)> {
        vec![
            ("flops_per_item", self.flops_per_token),
            ("peak_flops", self.peak_flops),
        ]
    }
    fn val_metric_meta(&self) -> Vec<(&'static str, &'static str, &'static str)> {
        vec![("val.ppl", "", "MINIMIZE")]
    }
    fn training_step(&mut self, batch: &TokenBatch) -> Tensor {
        Llama::loss(&self.logits(&batch.input, true), &batch.labels)
    }
    fn validation_step(&mut self, batch: &TokenBatch) -> EvalOutput {
        let tokens = batch.labels.numel();
        let loss = Llama::loss(&self.logits(&batch.input, false), &batch.labels);
        EvalOutput {
            loss_sum: loss * tokens as f64,
            counts: Vec::new(),
            samples: tokens,
        }
    }
    /// `val.loss` = mean next-token cross entropy over the evaluated tokens, `val.ppl` =
    /// exp(`val.loss`).
    fn validation_epoch_end(
        &mut self,
        loss_sum: f64,
        _counts: &[(&'static str, f64)],
        samples: usize,
    ) -> Vec<(String, f64)> {
        let loss = loss_sum / samples.max(1) as f64;
        vec![
            ("val.loss".to_string(), loss),
            ("val.ppl".to_string(), loss.exp()),
        ]
    }
    fn test_step(&mut self, batch: &TokenBatch) -> Tensor {
        self.logits(&batch.input, false).argmax(-1, false)
    }
    fn configure_optimizers(&self, _steps_per_epoch: u64, _total_steps: u64) -> OptimizerConfig {
        let o = &self.optimizer;
        OptimizerConfig {
            lr: o.lr.max_lr,
            algorithm: Algorithm::AdamW {
                beta1: o.adam_beta1,
                beta2: o.adam_beta2,
                epsilon: o.adam_epsilon,
            },
            weight_decay: o.weight_decay,
            schedule: o.lr.to_schedule(),
            clip_grad_norm: o.grad_clip.max_norm(),
        }
    }
}
