//! Cold start of a one-shot command such as `capstan render`.
//!
//! The first render in a fresh process pays for state a warm process already has: heap pages
//! the kernel must fault in and zero, the CPU-feature probe the first substring search runs
//! (`cpuid`, which traps to the hypervisor on a virtual machine), and the render's code, which
//! is neither mapped nor in any CPU cache yet. All of it is process-wide (the last level cache
//! is shared by the cores), so a helper thread can take it while the main thread parses flags
//! and reads the chart; on a machine with a second core the main thread then finds it done
//! (docs/benchmarks.md, "Cold start").

use std::thread;

/// Heap populated ahead of the main thread (see [`populate_heap`]). The first render of a
/// small chart touches 1–2 MiB of fresh heap, and the stretch is backed with 2 MiB pages
/// where the kernel allows them; 8 MiB covers that with room to spare.
const HEAP_AHEAD_BYTES: usize = 8 << 20;

/// Heap prefaulted by allocating and freeing a block where `MADV_POPULATE_WRITE` is missing:
/// the allocator may hand those pages to the main thread, or not (its threads take pages from
/// the arena in turn), so this fallback saves less.
const PREFAULT_BYTES: usize = 4 << 20;

/// Starts the helper thread and returns at once. The helper only fills process-wide caches
/// and touches memory it frees again, so nothing waits for it and nothing breaks if it is
/// late, cannot start, or never runs. `CAPSTAN_NO_WARMUP` (any value) turns it off, to
/// measure what it saves.
pub fn start() {
    if std::env::var_os("CAPSTAN_NO_WARMUP").is_some() {
        return;
    }
    // Where the allocator hands out memory now: the main thread's next blocks follow it.
    let probe = std::hint::black_box(Box::new(0usize));
    let heap_at = &*probe as *const usize as usize;
    // A failed spawn (thread limit) only loses the head start.
    let _ = thread::Builder::new().name("warmup".into()).spawn(move || {
        if !populate_heap(heap_at) {
            prefault_heap();
        }
        prefetch_hot_code();
        detect_cpu_features();
    });
}

/// First and last entry of `build/hot-functions.txt`: the linker places the functions a render
/// runs between these two (build.rs), so their addresses bound the code to prefetch. The
/// return values differ so that no linker folds the two into one.
#[unsafe(no_mangle)]
#[inline(never)]
pub extern "C" fn capstan_hot_code_begin() -> u32 {
    std::hint::black_box(1)
}

/// See [`capstan_hot_code_begin`].
#[unsafe(no_mangle)]
#[inline(never)]
pub extern "C" fn capstan_hot_code_end() -> u32 {
    std::hint::black_box(2)
}

/// Larger than the hot code of any render (about 2 MiB); a wider span means the build did not
/// order the code (GNU ld, `CAPSTAN_NO_CODE_ORDER`) and the markers lie anywhere.
const MAX_HOT_CODE_BYTES: usize = 8 << 20;

/// Maps the hot code's pages in one call and pulls its cache lines into the shared cache, in
/// address order, which the hardware prefetcher follows at memory bandwidth; the main thread
/// would otherwise fetch the same lines one miss at a time as it first runs them.
fn prefetch_hot_code() {
    let begin = capstan_hot_code_begin as *const () as usize;
    let end = capstan_hot_code_end as *const () as usize;
    if end <= begin || end - begin > MAX_HOT_CODE_BYTES {
        return;
    }
    populate_pages(begin, end);
    #[cfg(target_arch = "x86_64")]
    for line in (begin..end).step_by(64) {
        // SAFETY: a prefetch is a hint: it never faults, reads nothing into the program and
        // has no effect on memory; the address is within the executable's own code.
        unsafe { std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T1 }>(line as *const i8) };
    }
}

/// Asks the kernel to map every page of `[begin, end)` now (Linux 5.14 and later) instead of
/// on first execution; an older kernel refuses and the pages fault in as before.
fn populate_pages(begin: usize, end: usize) {
    #[cfg(target_os = "linux")]
    {
        const PAGE: usize = 4096;
        let start = begin & !(PAGE - 1);
        // SAFETY: MADV_POPULATE_READ only faults pages in, as reading them would; it changes
        // no mapping and no contents.
        unsafe {
            libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_POPULATE_READ);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (begin, end);
}

/// Populates the heap the main thread is about to use: the allocator's arena (mimalloc's, in
/// the binary) is one large mapping that it hands out from low to high addresses, so the
/// `HEAP_AHEAD_BYTES` after a fresh block are where the render's blocks land. The kernel maps
/// and zeroes those pages here, on the helper's core, without writing to them. False where
/// the kernel does not know `MADV_POPULATE_WRITE` (before 5.14).
fn populate_heap(heap_at: usize) -> bool {
    #[cfg(target_os = "linux")]
    {
        const PAGE: usize = 4096;
        const HUGE_PAGE: usize = 2 << 20;
        // From the fresh block's own page: that much is surely the heap's mapping.
        let start = heap_at & !(PAGE - 1);
        // This stretch in 2 MiB transparent huge pages where the kernel has them (one fault
        // and one zeroing each). The allocator asks for none itself (mimalloc's `no_thp`):
        // beyond this stretch, a large render's memory is backed 4 KiB at a time.
        let huge_start = start.next_multiple_of(HUGE_PAGE);
        let end = start + HEAP_AHEAD_BYTES;
        // SAFETY: MADV_HUGEPAGE is advice on how to back the range; it changes no contents.
        // MADV_POPULATE_WRITE faults pages in writable as a write would, without changing
        // their contents or the mapping; a range past the mapping's end, if any, is refused
        // (ENOMEM) after the mapped part is done.
        unsafe {
            libc::madvise(
                huge_start as *mut libc::c_void,
                end - huge_start,
                libc::MADV_HUGEPAGE,
            );
        }
        let done = unsafe {
            libc::madvise(
                start as *mut libc::c_void,
                HEAP_AHEAD_BYTES,
                libc::MADV_POPULATE_WRITE,
            )
        };
        done == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::EINVAL)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = heap_at;
        false
    }
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
