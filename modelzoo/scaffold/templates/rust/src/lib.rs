//! {{title}} as a ModelZoo standard case: the model, its engine module and the recipe
//! `run_{{name}}` trains it with (docs/engine.md, "Adding a model").

pub mod args;
pub mod model;
pub mod module;
pub mod recipe;
