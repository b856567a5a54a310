//! A count of the work a migration does on the current thread: the lexer's byte and token
//! steps, the diff's line steps, the block-structure and name scans of the apex checks, the
//! record's line lookups. It lets a test tell linear growth from quadratic without timing
//! anything (issue #28: one file of 120k lines took 92 s): each metered loop adds the
//! iterations it actually ran, so a nested loop creeping back into one of them shows as a count
//! that grows with the square of the file. Loops that are not metered are not seen.
//!
//! Per thread, so tests running side by side do not mix their counts; a scan of a directory
//! holding one file migrates it on the calling thread.

use std::cell::Cell;

thread_local! {
    static STEPS: Cell<u64> = const { Cell::new(0) };
}

/// The steps counted on this thread so far.
pub fn steps() -> u64 {
    STEPS.with(|s| s.get())
}

/// Resets this thread's count to zero.
pub fn reset() {
    STEPS.with(|s| s.set(0));
}

/// Adds `n` steps (a loop's iteration count, added once when it ends).
pub(crate) fn add(n: u64) {
    STEPS.with(|s| s.set(s.get().saturating_add(n)));
}
