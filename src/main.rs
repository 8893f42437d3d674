#![forbid(unsafe_code)]

use std::process::ExitCode;

// Renders allocate and free many small values; mimalloc is measurably faster at that than
// glibc's malloc (docs/benchmarks.md, issue 10).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    capstan::cli::main()
}
