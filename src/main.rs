#![forbid(unsafe_code)]

use std::process::ExitCode;

// Renders allocate and free many small values; mimalloc is measurably faster at that than
// glibc's malloc (docs/benchmarks.md, issue 10). Without the `mimalloc` feature (a heap
// profiling build) the system allocator stays.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    capstan::cli::main()
}
