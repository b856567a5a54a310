//! BERT as an engine `BasicModule`: the task's loss (Hugging Face's: masked-LM + next-sentence
//! cross entropy, classification cross entropy, the mean of the span start / end cross
//! entropies), LAMB or AdamW with linear warm-up and polynomial decay, tokens/s and
//! `train.mfu`, and the task's evaluation metrics — `val.mlm_acc` (FlagPerf's BERT metric, a
//! fraction) and `val.nsp_acc`; `val.acc` (%); `val.exact_match` and `val.f1` (%, the official
//! SQuAD v1.1 scoring).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use modelzoo_engine::{
    Algorithm, BasicModule, EvalOutput, OptimizerConfig, Schedule, StepInfo, TrainDevice,
};
use tch::nn::VarStore;
use tch::{Device, Kind, Tensor};

use crate::config::{BertConfig, Task};
use crate::data::squad::{self, SquadSamples};
use crate::data::{BertBatch, Target};
use crate::model::{Bert, Inputs};

/// The device peak `train.mfu` is measured against (shared with run_gpt and run_llama).
pub use modelzoo_text::mfu::peak_flops;

/// The update rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OptimizerKind {
    /// NVIDIA's BERT pretraining optimizer (apex `FusedLAMB` semantics).
    Lamb,
    /// `torch.optim.AdamW`, BERT fine-tuning's.
    AdamW,
}

impl OptimizerKind {
    /// `--optimizer` (or the task's default).
    pub fn parse(name: Option<&str>, task: Task) -> Result<OptimizerKind, String> {
        match name {
            None if task == Task::Pretrain => Ok(OptimizerKind::Lamb),
            None => Ok(OptimizerKind::AdamW),
            Some("lamb") => Ok(OptimizerKind::Lamb),
            Some("adamw") => Ok(OptimizerKind::AdamW),
            Some(other) => Err(format!(
                "unknown --optimizer {other:?}; choose lamb or adamw"
            )),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            OptimizerKind::Lamb => "lamb",
            OptimizerKind::AdamW => "adamw",
        }
    }
}

/// The training recipe's hyper-parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct Hyper {
    pub lr: f64,
    pub optimizer: OptimizerKind,
    pub weight_decay: f64,
    /// Warm-up steps as a fraction of the run's optimizer steps.
    pub warmup_proportion: f64,
    pub poly_power: f64,
    pub clip_grad_norm: Option<f64>,
}

impl Hyper {
    /// The optimizer of a run of `total` optimizer steps: β = (0.9, 0.999), ε = 1e-6 (BERT's
    /// and apex FusedLAMB's), warm-up `ceil(warmup_proportion × total)` steps.
    pub fn optimizer_config(&self, total: u64) -> OptimizerConfig {
        let (beta1, beta2, epsilon) = (0.9, 0.999, 1e-6);
        OptimizerConfig {
            lr: self.lr,
            algorithm: match self.optimizer {
                OptimizerKind::Lamb => Algorithm::Lamb {
                    beta1,
                    beta2,
                    epsilon,
                },
                OptimizerKind::AdamW => Algorithm::AdamW {
                    beta1,
                    beta2,
                    epsilon,
                },
            },
            weight_decay: self.weight_decay,
            schedule: Schedule::PolyWarmup {
                warmup_steps: (self.warmup_proportion * total as f64).ceil() as u64,
                degree: self.poly_power,
            },
            clip_grad_norm: self.clip_grad_norm,
        }
    }
}

/// A batch's loss, its evaluation counts and (squad) its start / end logits.
type Forward = (
    Tensor,
    Vec<(&'static str, Tensor)>,
    Option<(Tensor, Tensor)>,
);

/// SQuAD evaluation in progress: the best span of each question seen so far.
struct SquadEval {
    val: Arc<SquadSamples>,
    max_answer: usize,
    best: HashMap<usize, (f32, String)>,
    seen: HashSet<usize>,
}

/// A BERT with its task's head and training recipe.
pub struct BertModule {
    vs: VarStore,
    net: Bert,
    task: Task,
    hyper: Hyper,
    flops_per_token: f64,
    peak_flops: f64,
    squad: Option<SquadEval>,
}

fn inputs(b: &BertBatch) -> Inputs<'_> {
    Inputs {
        ids: &b.input_ids,
        token_type_ids: Some(&b.token_type_ids),
        attention_mask: Some(&b.attention_mask),
    }
}

/// Cross entropy in at least fp32 (the logits may be bf16 / fp16 under autocast). fp32 and
/// fp64 logits are used as they are — no `aten::to` call — so an fp32 run's `--dump` records
/// line up op for op with the fp64 arbiter's for `modelzoo diff`.
fn ce(logits: &Tensor, labels: &Tensor) -> Tensor {
    match logits.kind() {
        Kind::Half | Kind::BFloat16 => logits.to_kind(Kind::Float),
        _ => logits.shallow_clone(),
    }
    .cross_entropy_for_logits(labels)
}

/// A forward pass that refused its batch: the batches are built to fit the model, so this is
/// a bug; it is reported through the engine's libtorch-error handler.
fn refused(e: impl std::fmt::Display) -> ! {
    panic!("BERT forward failed on a batch: {e}")
}

impl BertModule {
    /// Builds the network on the CPU with `seed`-determined initial weights. `seq` is the
    /// training sequence length and `mlm_fraction` the share of tokens predicted (for the
    /// FLOPs per token), `peak_flops` the device's peak.
    pub fn new(
        config: &BertConfig,
        task: Task,
        hyper: Hyper,
        seq: i64,
        mlm_fraction: f64,
        peak_flops: f64,
        seed: u64,
    ) -> BertModule {
        tch::manual_seed(seed as i64);
        let vs = VarStore::new(Device::Cpu);
        let net = Bert::new(&vs.root(), config, task);
        BertModule {
            flops_per_token: config.train_flops_per_token(task, seq, mlm_fraction),
            vs,
            net,
            task,
            hyper,
            peak_flops,
            squad: None,
        }
    }

    /// Evaluates SQuAD spans against `val`'s questions (`--task squad`).
    pub fn with_squad_eval(mut self, val: Arc<SquadSamples>, max_answer: usize) -> BertModule {
        self.squad = Some(SquadEval {
            val,
            max_answer,
            best: HashMap::new(),
            seen: HashSet::new(),
        });
        self
    }

    /// The network (tests compare it with references).
    pub fn model(&self) -> &Bert {
        &self.net
    }

    /// Training FLOPs per token, as used for `train.mfu`.
    pub fn flops_per_token(&self) -> f64 {
        self.flops_per_token
    }

    /// The loss of a batch and, for evaluation, its counts (and SQuAD's span logits).
    fn forward(&self, b: &BertBatch, train: bool) -> Forward {
        match &b.target {
            Target::Pretrain {
                mlm_positions,
                mlm_labels,
                next_sentence,
            } => {
                let (mlm, nsp) = self
                    .net
                    .pretraining(inputs(b), Some(mlm_positions), train)
                    .unwrap_or_else(|e| refused(e));
                let loss = ce(&mlm, mlm_labels) + ce(&nsp, next_sentence);
                let counts = if train {
                    Vec::new()
                } else {
                    vec![
                        (
                            "mlm_correct",
                            mlm.argmax(-1, false).eq_tensor(mlm_labels).sum(Kind::Float),
                        ),
                        ("mlm_total", mlm_labels.ones_like().sum(Kind::Float)),
                        (
                            "nsp_correct",
                            nsp.argmax(-1, false)
                                .eq_tensor(next_sentence)
                                .sum(Kind::Float),
                        ),
                    ]
                };
                (loss, counts, None)
            }
            Target::Classification { labels } => {
                let logits = self
                    .net
                    .classify(inputs(b), train)
                    .unwrap_or_else(|e| refused(e));
                let counts = if train {
                    Vec::new()
                } else {
                    vec![(
                        "acc",
                        logits.argmax(-1, false).eq_tensor(labels).sum(Kind::Float),
                    )]
                };
                (ce(&logits, labels), counts, None)
            }
            Target::Squad { start, end, .. } => {
                let (s, e) = self
                    .net
                    .answer_spans(inputs(b), train)
                    .unwrap_or_else(|e| refused(e));
                let loss = (ce(&s, start) + ce(&e, end)) / 2.0;
                (loss, Vec::new(), Some((s, e)))
            }
        }
    }

    /// Records the best span of each SQuAD feature of `b` from its logits `(s, e)`.
    fn squad_spans(&mut self, b: &BertBatch, (s, e): (Tensor, Tensor)) {
        let (Some(eval), Target::Squad { features, .. }) = (self.squad.as_mut(), &b.target) else {
            return;
        };
        let rows = |t: &Tensor| -> Vec<Vec<f32>> {
            Vec::try_from(t.to_kind(Kind::Float).to_device(Device::Cpu)).unwrap_or_default()
        };
        let (starts, ends) = (rows(&s), rows(&e));
        for ((&f, start), end) in features.iter().zip(&starts).zip(&ends) {
            let ex = eval.val.example_of(f);
            eval.seen.insert(ex);
            if let Some((score, text)) = eval.val.best_span(f, start, end, eval.max_answer) {
                if eval.best.get(&ex).is_none_or(|(b, _)| score > *b) {
                    eval.best.insert(ex, (score, text));
                }
            }
        }
    }
}

impl BasicModule for BertModule {
    type Batch = BertBatch;

    fn var_store(&self) -> &VarStore {
        &self.vs
    }

    fn var_store_mut(&mut self) -> &mut VarStore {
        &mut self.vs
    }

    fn pretreating_batch(&mut self, b: BertBatch, device: &dyn TrainDevice) -> BertBatch {
        let to = |t: &Tensor| device.to_device(t);
        let target = match b.target {
            Target::Pretrain {
                mlm_positions,
                mlm_labels,
                next_sentence,
            } => Target::Pretrain {
                mlm_positions: to(&mlm_positions),
                mlm_labels: to(&mlm_labels),
                next_sentence: to(&next_sentence),
            },
            Target::Classification { labels } => Target::Classification {
                labels: to(&labels),
            },
            Target::Squad {
                start,
                end,
                features,
            } => Target::Squad {
                start: to(&start),
                end: to(&end),
                features,
            },
        };
        BertBatch {
            input_ids: to(&b.input_ids),
            token_type_ids: to(&b.token_type_ids),
            attention_mask: to(&b.attention_mask),
            target,
        }
    }

    /// Tokens, padding included (what the step computes on).
    fn items_in(&self, b: &BertBatch) -> usize {
        b.input_ids.numel()
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
        match self.task {
            Task::Pretrain => vec![
                ("val.mlm_acc", "", "MAXIMIZE"),
                ("val.nsp_acc", "", "MAXIMIZE"),
            ],
            Task::Classification { .. } => vec![("val.acc", "%", "MAXIMIZE")],
            Task::Squad => vec![
                ("val.exact_match", "%", "MAXIMIZE"),
                ("val.f1", "%", "MAXIMIZE"),
            ],
        }
    }

    fn training_step(&mut self, b: &BertBatch) -> Tensor {
        self.forward(b, true).0
    }

    fn validation_step(&mut self, b: &BertBatch) -> EvalOutput {
        let rows = b.rows();
        let (loss, counts, spans) = self.forward(b, false);
        if let Some(spans) = spans {
            self.squad_spans(b, spans);
        }
        EvalOutput {
            loss_sum: loss * rows as f64,
            counts,
            samples: rows,
        }
    }

    /// `val.loss` = mean loss per sequence; pretraining: `val.mlm_acc` = masked tokens
    /// predicted right / masked tokens, `val.nsp_acc` = next-sentence labels right /
    /// sequences (fractions, as FlagPerf's `mlm_acc`); classification: `val.acc` (%);
    /// squad: `val.exact_match`, `val.f1` (%, averaged over the questions evaluated).
    fn validation_epoch_end(
        &mut self,
        loss_sum: f64,
        counts: &[(&'static str, f64)],
        samples: usize,
    ) -> Vec<(String, f64)> {
        let n = samples.max(1) as f64;
        let count = |k: &str| counts.iter().find(|(c, _)| *c == k).map_or(0.0, |c| c.1);
        let mut m = vec![("val.loss".to_string(), loss_sum / n)];
        match self.task {
            Task::Pretrain => {
                m.push((
                    "val.mlm_acc".into(),
                    count("mlm_correct") / count("mlm_total").max(1.0),
                ));
                m.push(("val.nsp_acc".into(), count("nsp_correct") / n));
            }
            Task::Classification { .. } => m.push(("val.acc".into(), count("acc") / n * 100.0)),
            Task::Squad => {
                if let Some(eval) = self.squad.as_mut() {
                    let (mut em, mut f1) = (0.0, 0.0);
                    for &ex in &eval.seen {
                        if let Some((_, text)) = eval.best.get(&ex) {
                            let answers = &eval.val.examples[ex].answers;
                            em += squad::max_over(squad::exact_match, text, answers);
                            f1 += squad::max_over(squad::f1, text, answers);
                        }
                    }
                    let q = eval.seen.len().max(1) as f64;
                    m.push(("val.exact_match".into(), em / q * 100.0));
                    m.push(("val.f1".into(), f1 / q * 100.0));
                    eval.best.clear();
                    eval.seen.clear();
                }
            }
        }
        m
    }

    fn test_step(&mut self, b: &BertBatch) -> Tensor {
        let i = inputs(b);
        match self.task {
            Task::Pretrain => {
                let (mlm, _) = self
                    .net
                    .pretraining(i, None, false)
                    .unwrap_or_else(|e| refused(e));
                mlm.argmax(-1, false)
            }
            Task::Classification { .. } => self
                .net
                .classify(i, false)
                .unwrap_or_else(|e| refused(e))
                .argmax(-1, false),
            Task::Squad => {
                let (s, e) = self
                    .net
                    .answer_spans(i, false)
                    .unwrap_or_else(|e| refused(e));
                Tensor::stack(&[s.argmax(-1, false), e.argmax(-1, false)], 1)
            }
        }
    }

    fn configure_optimizers(&self, _steps_per_epoch: u64, total_steps: u64) -> OptimizerConfig {
        self.hyper.optimizer_config(total_steps)
    }
}
