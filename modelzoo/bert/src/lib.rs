//! `modelzoo_bert`: the BERT standard case — an encoder in tch with Hugging Face
//! `BertForPreTraining` / `BertForSequenceClassification` / `BertForQuestionAnswering`'s
//! parameter names and numerics, masked-LM + next-sentence pretraining with LAMB, sequence
//! classification and SQuAD v1.1 fine-tuning, Hugging Face safetensors loading, and the recipe
//! `run_bert` runs on the zoo's engine.

pub mod args;
pub mod checkpoint;
pub mod config;
pub mod data;
pub mod model;
pub mod module;
pub mod pretrained;
pub mod recipe;
pub mod tokenizer;

pub use config::{BertConfig, Task, Variant};
pub use model::{Bert, Inputs};
