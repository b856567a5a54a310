//! An [`Engine`]'s state on disk: atomic checkpoints of model, optimizer, scaler and counters,
//! and exact resume from them.

use std::path::{Path, PathBuf};

use tch::Tensor;

use super::Engine;
use crate::checkpoint::{self, Counters};
use crate::module::BasicModule;
use crate::EngineError;

/// What [`Engine::restore`] read.
pub(super) struct Restored {
    pub(super) file: PathBuf,
    /// Newer checkpoints passed over because they could not be read.
    pub(super) unreadable: Vec<PathBuf>,
    /// The schedule length the checkpoint was trained toward (absent in older checkpoints).
    pub(super) total_steps: Option<u64>,
}

/// Checkpoint entry holding the schedule length (optimizer steps) the run was trained toward.
const TOTAL_STEPS: &str = "meta/total_steps";

impl<'d, M: BasicModule> Engine<'d, M> {
    /// Save at the current step (rank 0 only under data parallel: the others return the path
    /// rank 0 writes).
    pub(super) fn save_checkpoint(&mut self) -> Result<PathBuf, EngineError> {
        let path = checkpoint::path_for(&self.settings.ckpt_dir, self.counters.step);
        if !self.is_main() {
            return Ok(path);
        }
        self.save(&path)?;
        checkpoint::prune(
            &self.settings.ckpt_dir,
            self.settings.keep_last,
            self.counters.step,
        )?;
        tracing::info!("checkpoint {}", path.display());
        Ok(path)
    }

    /// Write model, optimizer, scaler and counters to `path` atomically.
    pub fn save(&self, path: &Path) -> Result<(), EngineError> {
        let dev = self.device;
        let mut named: Vec<(String, Tensor)> = self
            .all_vars
            .iter()
            .map(|(n, t)| (format!("model/{n}"), dev.to_cpu(t)))
            .collect();
        if let Some(opt) = &self.opt {
            named.extend(
                opt.state_entries()
                    .into_iter()
                    .map(|(k, t)| (k, dev.to_cpu(t))),
            );
            named.push(("optim_updates".into(), opt.updates_tensor()));
        }
        if let Some(sc) = &self.scaler {
            named.push(("scaler/scale".into(), dev.to_cpu(&sc.scale)));
            named.push(("scaler/growth".into(), dev.to_cpu(&sc.growth_tracker)));
        }
        if let Some(total) = self.total_steps {
            named.push((TOTAL_STEPS.into(), Tensor::from_slice(&[total as i64])));
        }
        checkpoint::write(path, &named, self.counters)
    }

    /// Restore from a checkpoint file, or the newest readable one in a checkpoint directory
    /// or a run's output directory (a truncated newest one is passed over, with a warning):
    /// model variables always; optimizer, scaler and counters when `fit` has set the
    /// optimizer up.
    pub fn load(&mut self, path: &Path) -> Result<(), EngineError> {
        self.restore(path).map(|_| ())
    }

    pub(super) fn restore(&mut self, path: &Path) -> Result<Restored, EngineError> {
        let loaded = checkpoint::read_newest(path)?;
        let (file, counters) = (loaded.file, loaded.counters);
        for (bad, why) in &loaded.unreadable {
            let msg = format!(
                "checkpoint {} cannot be read ({why}); falling back to {}, the newest good one \
                 (step {})",
                bad.display(),
                file.display(),
                counters.step
            );
            tracing::warn!("{msg}");
            self.sink.info(&format!("WARNING: {msg}"));
        }
        let map: std::collections::HashMap<String, Tensor> = loaded.named.into_iter().collect();
        let bad = |message: String| EngineError::Checkpoint {
            path: file.clone(),
            message,
        };
        let dev = self.device;
        let copy = |dst: &Tensor, key: &str| -> Result<(), EngineError> {
            let src = map.get(key).ok_or_else(|| bad(format!("missing {key}")))?;
            if src.size() != dst.size() {
                return Err(bad(format!(
                    "{key} has shape {:?}, the model expects {:?} (another model variant?)",
                    src.size(),
                    dst.size()
                )));
            }
            let mut d = dst.shallow_clone();
            tch::no_grad(|| d.copy_(&dev.to_device(src)));
            Ok(())
        };
        for (n, t) in &self.all_vars {
            copy(t, &format!("model/{n}"))?;
        }
        if let Some(opt) = self.opt.as_mut() {
            for (k, t) in opt.state_entries() {
                copy(t, &k)?;
            }
            // Checkpoints written before AdamW carry no update count: SGD does not need one.
            if let Some(u) = map.get("optim_updates") {
                opt.updates = u.int64_value(&[0]).max(0) as u64;
            }
        }
        if let Some(sc) = &self.scaler {
            if map.contains_key("scaler/scale") {
                copy(&sc.scale, "scaler/scale")?;
                copy(&sc.growth_tracker, "scaler/growth")?;
            }
        }
        if self.opt.is_some() {
            self.counters = Counters {
                seed: self.settings.seed,
                ..counters
            };
        }
        let total_steps = map
            .get(TOTAL_STEPS)
            .and_then(|t| u64::try_from(t.int64_value(&[0])).ok());
        tracing::info!("resumed from {} at step {}", file.display(), counters.step);
        Ok(Restored {
            file,
            unreadable: loaded.unreadable.into_iter().map(|(p, _)| p).collect(),
            total_steps,
        })
    }
}
