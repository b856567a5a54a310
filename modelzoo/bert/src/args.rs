//! `run_bert`'s own arguments (spec.yaml), typed by build.rs.

include!(concat!(env!("OUT_DIR"), "/model_args.rs"));
