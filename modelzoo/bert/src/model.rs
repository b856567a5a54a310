//! BERT in tch, as Hugging Face's `BertModel` and its heads compute it: word + position +
//! token-type embeddings and LayerNorm, post-LayerNorm encoder layers with bidirectional
//! attention through libtorch's `scaled_dot_product_attention` (padding masked by
//! `attention_mask`), erf GELU, dropout in training; the pooler (`tanh(dense(h[:, 0]))`); and
//! the heads of `BertForPreTraining` (prediction-head transform, decoder tied to the word
//! embedding plus `cls.predictions.bias`, `cls.seq_relationship`),
//! `BertForSequenceClassification` (`classifier`) and `BertForQuestionAnswering`
//! (`qa_outputs`, no pooler). Variable names are exactly Hugging Face's
//! (`bert.encoder.layer.0.attention.self.query.weight`, ...), so its state dicts load by name
//! (`crate::pretrained`); each module's ops are captured under its Hugging Face path for
//! `--dump`.

use device_sdaa::capture;
use tch::nn::{self, Init};
use tch::{Kind, Tensor};

use crate::config::{BertConfig, Task};

/// Input the model cannot take.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    #[error("input ids must be a non-empty [batch, seq] tensor of integers, got shape {shape:?} kind {kind:?}")]
    BadInput { shape: Vec<i64>, kind: Kind },
    #[error(
        "sequence of {seq} tokens exceeds max_position_embeddings = {max}; lower --max_seq_length"
    )]
    TooLong { seq: i64, max: i64 },
    #[error("{what} has shape {got:?}, the input ids {want:?}")]
    Shape {
        what: &'static str,
        got: Vec<i64>,
        want: Vec<i64>,
    },
    #[error("this BERT has the {have} head; {wanted} was asked for")]
    WrongHead {
        have: &'static str,
        wanted: &'static str,
    },
}

/// One batch of encoder input: `ids` `[batch, seq]`; `token_type_ids` (zeros when absent) and
/// `attention_mask` (1 = a real token, 0 = padding; all attended when absent) of its shape.
#[derive(Debug, Clone, Copy)]
pub struct Inputs<'a> {
    pub ids: &'a Tensor,
    pub token_type_ids: Option<&'a Tensor>,
    pub attention_mask: Option<&'a Tensor>,
}

/// `x @ weight.T + bias`, with Hugging Face's `nn.Linear` variable names.
#[derive(Debug)]
struct Linear {
    weight: Tensor,
    bias: Tensor,
}

impl Linear {
    fn new(p: nn::Path, inputs: i64, outputs: i64, std: f64) -> Linear {
        Linear {
            weight: p.var(
                "weight",
                &[outputs, inputs],
                Init::Randn {
                    mean: 0.0,
                    stdev: std,
                },
            ),
            bias: p.var("bias", &[outputs], Init::Const(0.0)),
        }
    }

    fn forward(&self, x: &Tensor) -> Tensor {
        x.linear(&self.weight, Some(&self.bias))
    }
}

/// `nn.LayerNorm` (`weight`, `bias`).
#[derive(Debug)]
struct LayerNorm {
    weight: Tensor,
    bias: Tensor,
    eps: f64,
}

impl LayerNorm {
    fn new(p: nn::Path, n: i64, eps: f64) -> LayerNorm {
        LayerNorm {
            weight: p.var("weight", &[n], Init::Const(1.0)),
            bias: p.var("bias", &[n], Init::Const(0.0)),
            eps,
        }
    }

    fn forward(&self, x: &Tensor) -> Tensor {
        let n = *x.size().last().unwrap_or(&1);
        x.layer_norm([n], Some(&self.weight), Some(&self.bias), self.eps, true)
    }
}

/// One encoder layer (`bert.encoder.layer.{i}`).
#[derive(Debug)]
struct Layer {
    name: String,
    query: Linear,
    key: Linear,
    value: Linear,
    attention_output: Linear,
    attention_norm: LayerNorm,
    intermediate: Linear,
    output: Linear,
    output_norm: LayerNorm,
}

/// Shapes and rates a layer computes with.
#[derive(Debug, Clone, Copy)]
struct Dims {
    hidden: i64,
    heads: i64,
    head_dim: i64,
    dropout: f64,
    attention_dropout: f64,
}

impl Layer {
    /// `mask`: boolean `[batch, 1, 1, seq]`, true where a key position is attended.
    fn forward(&self, d: &Dims, x: &Tensor, mask: Option<&Tensor>, train: bool) -> Tensor {
        let size = x.size();
        let (b, t) = (size[0], size[1]);
        let n = &self.name;
        let context = capture::module(&format!("{n}.attention.self"), x, || {
            let heads = |l: &Linear| {
                l.forward(x)
                    .view([b, t, d.heads, d.head_dim])
                    .transpose(1, 2)
            };
            let (q, k, v) = (heads(&self.query), heads(&self.key), heads(&self.value));
            let p = if train { d.attention_dropout } else { 0.0 };
            Tensor::scaled_dot_product_attention(&q, &k, &v, mask, p, false, None, false)
                .transpose(1, 2)
                .contiguous()
                .view([b, t, d.hidden])
        });
        let attended = capture::module(&format!("{n}.attention.output"), &context, || {
            let h = self
                .attention_output
                .forward(&context)
                .dropout(d.dropout, train);
            self.attention_norm.forward(&(h + x))
        });
        let inner = capture::module(&format!("{n}.intermediate"), &attended, || {
            self.intermediate.forward(&attended).gelu("none")
        });
        capture::module(&format!("{n}.output"), &inner, || {
            let h = self.output.forward(&inner).dropout(d.dropout, train);
            self.output_norm.forward(&(h + &attended))
        })
    }
}

/// The head weights of each task (Hugging Face names in comments).
#[derive(Debug)]
enum Head {
    Pretrain {
        /// `cls.predictions.transform.dense`
        transform: Linear,
        /// `cls.predictions.transform.LayerNorm`
        transform_norm: LayerNorm,
        /// `cls.predictions.bias` (the decoder's bias; its weight is the word embedding)
        decoder_bias: Tensor,
        /// `cls.seq_relationship`
        seq_relationship: Linear,
    },
    /// `classifier`
    Classification { classifier: Linear },
    /// `qa_outputs`
    Squad { qa_outputs: Linear },
}

/// A BERT with one task's head. Build it in a CPU `VarStore`, then move the store to the
/// device.
#[derive(Debug)]
pub struct Bert {
    config: BertConfig,
    task: Task,
    dims: Dims,
    word_embeddings: Tensor,
    position_embeddings: Tensor,
    token_type_embeddings: Tensor,
    embeddings_norm: LayerNorm,
    layers: Vec<Layer>,
    /// `bert.pooler.dense`; `None` for question answering.
    pooler: Option<Linear>,
    head: Head,
}

impl Bert {
    /// Creates the variables under `p` with Hugging Face's names and initialisation
    /// (`BertPreTrainedModel._init_weights`): N(0, initializer_range) for every linear and
    /// embedding weight, the `[PAD]` row of the word embedding zero, zero biases (the MLM
    /// decoder bias included), unit LayerNorm scales. The config must have passed
    /// [`BertConfig::validate`].
    pub fn new(p: &nn::Path, config: &BertConfig, task: Task) -> Bert {
        let (h, i) = (config.hidden_size, config.intermediate_size);
        let std = config.initializer_range;
        let eps = config.layer_norm_eps;
        let init = Init::Randn {
            mean: 0.0,
            stdev: std,
        };
        let bert = p / "bert";
        let emb = &bert / "embeddings";
        let word_embeddings =
            (&emb / "word_embeddings").var("weight", &[config.vocab_size, h], init);
        tch::no_grad(|| {
            let _ = word_embeddings.get(config.pad_token_id).fill_(0.0);
        });
        let position_embeddings = (&emb / "position_embeddings").var(
            "weight",
            &[config.max_position_embeddings, h],
            init,
        );
        let token_type_embeddings =
            (&emb / "token_type_embeddings").var("weight", &[config.type_vocab_size, h], init);
        let embeddings_norm = LayerNorm::new(&emb / "LayerNorm", h, eps);
        let layers = (0..config.num_hidden_layers)
            .map(|n| {
                let l = &bert / "encoder" / "layer" / n;
                let attn = &l / "attention";
                let s = &attn / "self";
                Layer {
                    name: format!("bert.encoder.layer.{n}"),
                    query: Linear::new(&s / "query", h, h, std),
                    key: Linear::new(&s / "key", h, h, std),
                    value: Linear::new(&s / "value", h, h, std),
                    attention_output: Linear::new(&attn / "output" / "dense", h, h, std),
                    attention_norm: LayerNorm::new(&attn / "output" / "LayerNorm", h, eps),
                    intermediate: Linear::new(&l / "intermediate" / "dense", h, i, std),
                    output: Linear::new(&l / "output" / "dense", i, h, std),
                    output_norm: LayerNorm::new(&l / "output" / "LayerNorm", h, eps),
                }
            })
            .collect();
        let pooler = task
            .has_pooler()
            .then(|| Linear::new(&bert / "pooler" / "dense", h, h, std));
        let head = match task {
            Task::Pretrain => {
                let cls = p / "cls";
                let pred = &cls / "predictions";
                Head::Pretrain {
                    transform: Linear::new(&pred / "transform" / "dense", h, h, std),
                    transform_norm: LayerNorm::new(&pred / "transform" / "LayerNorm", h, eps),
                    decoder_bias: pred.var("bias", &[config.vocab_size], Init::Const(0.0)),
                    seq_relationship: Linear::new(&cls / "seq_relationship", h, 2, std),
                }
            }
            Task::Classification { num_labels } => Head::Classification {
                classifier: Linear::new(p / "classifier", h, num_labels, std),
            },
            Task::Squad => Head::Squad {
                qa_outputs: Linear::new(p / "qa_outputs", h, 2, std),
            },
        };
        Bert {
            dims: Dims {
                hidden: h,
                heads: config.num_attention_heads,
                head_dim: config.head_dim(),
                dropout: config.hidden_dropout_prob,
                attention_dropout: config.attention_probs_dropout_prob,
            },
            config: config.clone(),
            task,
            word_embeddings,
            position_embeddings,
            token_type_embeddings,
            embeddings_norm,
            layers,
            pooler,
            head,
        }
    }

    pub fn config(&self) -> &BertConfig {
        &self.config
    }

    pub fn task(&self) -> Task {
        self.task
    }

    /// The last hidden states `[batch, seq, hidden]` (Hugging Face `last_hidden_state`).
    pub fn encode(&self, input: Inputs, train: bool) -> Result<Tensor, ModelError> {
        let ids = input.ids;
        let size = ids.size();
        let kind = ids.kind();
        if size.len() != 2
            || size[0] == 0
            || size[1] == 0
            || !matches!(kind, Kind::Int64 | Kind::Int | Kind::Int16 | Kind::Uint8)
        {
            return Err(ModelError::BadInput { shape: size, kind });
        }
        let seq = size[1];
        if seq > self.config.max_position_embeddings {
            return Err(ModelError::TooLong {
                seq,
                max: self.config.max_position_embeddings,
            });
        }
        for (what, t) in [
            ("token_type_ids", input.token_type_ids),
            ("attention_mask", input.attention_mask),
        ] {
            if let Some(t) = t {
                if t.size() != size {
                    return Err(ModelError::Shape {
                        what,
                        got: t.size(),
                        want: size,
                    });
                }
            }
        }
        let x = capture::module("bert.embeddings", ids, || {
            // Positions from a device tensor: `tch::Device` cannot name SDAA (PrivateUse1).
            let positions = ids.select(0, 0).ones_like().cumsum(0, Kind::Int64) - 1;
            let words = Tensor::embedding(
                &self.word_embeddings,
                ids,
                self.config.pad_token_id,
                false,
                false,
            );
            let types = match input.token_type_ids {
                Some(tt) => Tensor::embedding(&self.token_type_embeddings, tt, -1, false, false),
                None => self.token_type_embeddings.get(0).view([1, 1, -1]),
            };
            let pos = Tensor::embedding(&self.position_embeddings, &positions, -1, false, false);
            let e = words + types + pos.unsqueeze(0);
            self.embeddings_norm
                .forward(&e)
                .dropout(self.config.hidden_dropout_prob, train)
        });
        let mask = input
            .attention_mask
            .map(|m| m.ne(0).unsqueeze(1).unsqueeze(1));
        let mut x = x;
        for layer in &self.layers {
            let _scope = capture::scope(&layer.name);
            x = layer.forward(&self.dims, &x, mask.as_ref(), train);
        }
        Ok(x)
    }

    /// The pooled output `tanh(dense(h[:, 0]))` `[batch, hidden]`.
    fn pool(&self, sequence: &Tensor) -> Result<Tensor, ModelError> {
        let pooler = self.pooler.as_ref().ok_or(ModelError::WrongHead {
            have: "question-answering (no pooler)",
            wanted: "a pooled output",
        })?;
        let first = sequence.select(1, 0);
        Ok(capture::module("bert.pooler", &first, || {
            pooler.forward(&first).tanh()
        }))
    }

    fn wrong_head(&self, wanted: &'static str) -> ModelError {
        ModelError::WrongHead {
            have: self.task.hf_class(),
            wanted,
        }
    }

    /// `BertForPreTraining`: (masked-LM logits, next-sentence logits `[batch, 2]`). The
    /// masked-LM logits are those of every position `[batch, seq, vocab]` (Hugging Face's
    /// `prediction_logits`), or with `positions` (flat indices into `batch × seq`, int64) only
    /// those rows `[n, vocab]` — the same numbers for the tokens that are predicted, without
    /// the decoder's work on the others (as NVIDIA's BERT gathers masked positions first).
    pub fn pretraining(
        &self,
        input: Inputs,
        positions: Option<&Tensor>,
        train: bool,
    ) -> Result<(Tensor, Tensor), ModelError> {
        let Head::Pretrain {
            transform,
            transform_norm,
            decoder_bias,
            seq_relationship,
        } = &self.head
        else {
            return Err(self.wrong_head("BertForPreTraining"));
        };
        let sequence = self.encode(input, train)?;
        let pooled = self.pool(&sequence)?;
        let h = self.dims.hidden;
        let rows = match positions {
            Some(p) => sequence.view([-1, h]).index_select(0, p),
            None => sequence,
        };
        let mlm = capture::module("cls.predictions", &rows, || {
            let t = transform_norm.forward(&transform.forward(&rows).gelu("none"));
            t.linear(&self.word_embeddings, Some(decoder_bias))
        });
        let nsp = capture::module("cls.seq_relationship", &pooled, || {
            seq_relationship.forward(&pooled)
        });
        Ok((mlm, nsp))
    }

    /// `BertForSequenceClassification`: logits `[batch, num_labels]` of the pooled output
    /// (dropout in training).
    pub fn classify(&self, input: Inputs, train: bool) -> Result<Tensor, ModelError> {
        let Head::Classification { classifier } = &self.head else {
            return Err(self.wrong_head("BertForSequenceClassification"));
        };
        let sequence = self.encode(input, train)?;
        let pooled = self
            .pool(&sequence)?
            .dropout(self.config.hidden_dropout_prob, train);
        Ok(capture::module("classifier", &pooled, || {
            classifier.forward(&pooled)
        }))
    }

    /// `BertForQuestionAnswering`: (start logits, end logits), each `[batch, seq]`.
    pub fn answer_spans(&self, input: Inputs, train: bool) -> Result<(Tensor, Tensor), ModelError> {
        let Head::Squad { qa_outputs } = &self.head else {
            return Err(self.wrong_head("BertForQuestionAnswering"));
        };
        let sequence = self.encode(input, train)?;
        let logits = capture::module("qa_outputs", &sequence, || qa_outputs.forward(&sequence));
        let start = logits.select(2, 0).contiguous();
        let end = logits.select(2, 1).contiguous();
        Ok((start, end))
    }

    /// Parameters (the tied decoder counted once): transformers' count for this head.
    pub fn num_params(&self) -> u64 {
        self.config.num_params(self.task)
    }
}
