//! The `Generation` section: zero-shot decoding parameters.

use serde::{Deserialize, Serialize};

use super::{unsupported, Unsupported};

/// How generation picks the next token.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DecodeStrategy {
    Sampling,
    GreedySearch,
}

/// `Generation`: zero-shot decoding parameters (FleetX names and defaults).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Generation {
    /// Keep the k most likely tokens (0 = no top-k filter).
    pub top_k: i64,
    /// Keep the smallest set of tokens whose probability reaches top_p (1.0 = off).
    pub top_p: f64,
    pub temperature: f64,
    /// End-of-text is suppressed until this many tokens are generated.
    pub min_dec_len: usize,
    pub max_dec_len: usize,
    pub num_return_sequences: usize,
    pub decode_strategy: DecodeStrategy,
}

impl Default for Generation {
    fn default() -> Self {
        Generation {
            top_k: 50,
            top_p: 0.75,
            temperature: 1.0,
            min_dec_len: 1,
            max_dec_len: 200,
            num_return_sequences: 1,
            decode_strategy: DecodeStrategy::Sampling,
        }
    }
}

impl Generation {
    /// Rejects decoding parameters no generation can use.
    pub fn validate(&self) -> Result<(), Unsupported> {
        if self.top_k < 0 {
            return Err(unsupported("Generation.top_k", self.top_k, "must be ≥ 0"));
        }
        if !(self.top_p > 0.0 && self.top_p <= 1.0) {
            return Err(unsupported(
                "Generation.top_p",
                self.top_p,
                "must be in (0, 1]",
            ));
        }
        if self.temperature.is_nan() || self.temperature <= 0.0 {
            return Err(unsupported(
                "Generation.temperature",
                self.temperature,
                "must be positive",
            ));
        }
        if self.num_return_sequences == 0 {
            return Err(unsupported(
                "Generation.num_return_sequences",
                0,
                "must be at least 1",
            ));
        }
        if self.min_dec_len > self.max_dec_len {
            return Err(unsupported(
                "Generation.min_dec_len",
                self.min_dec_len,
                format!("exceeds max_dec_len ({})", self.max_dec_len),
            ));
        }
        Ok(())
    }
}
