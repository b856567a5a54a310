//! `app::keep_freed_memory` (every run_<model> calls it first): a large block freed and
//! allocated again is the same memory, not fresh pages the kernel faults in and zeroes again.
//! 48 MiB is above glibc's mmap ceiling (32 MiB), which the previous setting still mmap'd and
//! unmapped each time: ResNet-50's layer-1 activations, the image loader's batches.

/// Minor page faults of this process so far.
fn minor_faults() -> i64 {
    // SAFETY: getrusage writes one rusage into the zeroed struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    assert_eq!(unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) }, 0);
    usage.ru_minflt
}

/// Allocate `bytes`, write every page, free it.
fn touch(bytes: usize) {
    let mut v: Vec<u8> = Vec::with_capacity(bytes);
    v.resize(bytes, 1);
    std::hint::black_box(&v);
}

#[test]
fn a_freed_large_block_is_reused_without_faulting_its_pages_in_again() {
    assert!(
        !std::env::vars_os()
            .any(|(k, _)| k == "GLIBC_TUNABLES" || k.to_string_lossy().starts_with("MALLOC_")),
        "run without GLIBC_TUNABLES / MALLOC_*_ (keep_freed_memory leaves a tuned malloc alone)"
    );
    modelzoo_engine::app::keep_freed_memory();
    const BLOCK: usize = 48 << 20;
    let pages = (BLOCK / 4096) as i64;
    touch(BLOCK);
    let before = minor_faults();
    for _ in 0..3 {
        touch(BLOCK);
    }
    let again = minor_faults() - before;
    assert!(
        again < pages / 10,
        "three more 48 MiB blocks faulted {again} pages in ({pages} a block): freed memory went \
         back to the kernel"
    );
}
