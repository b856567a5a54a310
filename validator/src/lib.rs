//! `validator` answers the two questions every ported model must pass: "is this directory in
//! ModelZoo shape?" ([`layout`]) and "does the SDAA run match CUDA within 1%?" ([`compare`]).
