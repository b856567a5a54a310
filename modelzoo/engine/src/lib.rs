//! `modelzoo-engine`: the FleetX engine contract in Rust — a model implements [`BasicModule`]-style
//! hooks, the engine owns the loop: device placement, AMP, accumulation, clipping, LR stepping,
//! dllogger output, evaluation and atomic checkpoints.
