include!("../../build-support/rpath.rs");
