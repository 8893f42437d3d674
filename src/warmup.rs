//! Cold start of a one-shot command such as `capstan render`.
//!
//! The first render in a fresh process pays for state a warm process already has: heap pages
//! the kernel must fault in and zero, and the CPU-feature probe the first substring search
//! runs (`cpuid`, which traps to the hypervisor on a virtual machine). Both are process-wide,
//! so a helper thread can take them while the main thread parses flags and reads the chart;
//! on a machine with a second core the main thread then finds them done
//! (docs/benchmarks.md, "Cold start").

use std::thread;

/// Heap prefaulted by the helper. The first render of a small chart touches about 1 MiB of
/// fresh heap and the allocator backs its arena with 2 MiB transparent huge pages where the
/// kernel allows them; 4 MiB covers both with room to spare and is returned at once.
const PREFAULT_BYTES: usize = 4 << 20;

/// Starts the helper thread and returns at once. The helper only fills process-wide caches
/// and touches memory it frees again, so nothing waits for it and nothing breaks if it is
/// late, cannot start, or never runs. `CAPSTAN_NO_WARMUP` (any value) turns it off, to
/// measure what it saves.
pub fn start() {
    if std::env::var_os("CAPSTAN_NO_WARMUP").is_some() {
        return;
    }
    // A failed spawn (thread limit) only loses the head start.
    let _ = thread::Builder::new().name("warmup".into()).spawn(|| {
        prefault_heap();
        detect_cpu_features();
    });
}

/// Writes one byte per 4 KiB page of a fresh block and frees it: the kernel's faults and page
/// zeroing happen here, and the allocator hands the now-backed pages to the main thread.
fn prefault_heap() {
    let mut block = vec![0u8; PREFAULT_BYTES];
    for page in block.chunks_mut(4096) {
        page[0] = 1;
    }
    std::hint::black_box(&block);
}

/// Runs the standard library's CPU-feature detection, whose answer it keeps for the whole
/// process; `memchr`'s substring search asks for it on its first call.
fn detect_cpu_features() {
    #[cfg(target_arch = "x86_64")]
    {
        std::hint::black_box(std::arch::is_x86_feature_detected!("avx2"));
    }
}
