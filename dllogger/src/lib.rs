//! `dllogger` speaks the log format the whole Tecorigin ModelZoo uses.
//!
//! The writer ([`Logger`]) is compatible with `tcap_dllogger` (stdout `TCAPPDLL ...` lines and
//! the JSON stream backend); the reader turns any log a user has — our JSON lines, tcap JSON
//! and stdout lines, NVIDIA `DLLL` lines, plain `loss 1.23` lines — into [`Record`]s in one
//! bounded-memory pass.
