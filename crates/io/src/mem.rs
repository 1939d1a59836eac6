//! Returning memory to the system after a zone load.
//!
//! Loading a zone allocates far more (the parsed records, sort buffers) than
//! the built zone keeps. glibc's allocator keeps freed small blocks in its
//! heaps, so without help the resident size after a load stays near the
//! peak. Two calls fix that: at start a fixed mmap threshold (large buffers
//! get their own mappings, unmapped on free, instead of the default's
//! growing threshold that moves them into the heap), and after each load a
//! trim, which hands every free page of every heap back.

/// Sets a fixed mmap threshold of 256 KiB (also turns off the dynamic one).
pub fn tune_allocator() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only changes allocator parameters; any value is accepted or refused.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 256 * 1024);
    }
}

/// Returns free heap memory to the system (after a load or reload).
pub fn trim_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim has no preconditions; it only releases free pages.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Size of a transparent huge page on x86-64 and arm64 (4 KiB base pages).
const HUGE_PAGE: usize = 2 << 20;

/// Asks for the memory `[addr, addr + len)` (a long-lived, read-mostly
/// buffer such as a zone's index) to be backed by transparent huge pages,
/// and collapses it into them now where the kernel can (Linux 6.1+): random
/// lookups over gigabytes then miss the TLB far less. Only the whole huge
/// pages inside the range are concerned; failures (no THP, older kernel) are
/// ignored — this is a hint.
pub fn prefer_huge_pages(addr: usize, len: usize) {
    let start = addr.div_ceil(HUGE_PAGE) * HUGE_PAGE;
    let end = (addr.saturating_add(len) / HUGE_PAGE) * HUGE_PAGE;
    if end <= start {
        return;
    }
    #[cfg(target_os = "linux")]
    {
        /// MADV_COLLAPSE (Linux 6.1), not yet in every libc crate version.
        const MADV_COLLAPSE: libc::c_int = 25;
        let ptr = start as *mut libc::c_void;
        // SAFETY: madvise with these advices never changes the contents of
        // memory; on a range that is not mapped it fails with ENOMEM and
        // does nothing. The range lies inside a buffer the caller owns.
        unsafe {
            libc::madvise(ptr, end - start, libc::MADV_HUGEPAGE);
            libc::madvise(ptr, end - start, MADV_COLLAPSE);
        }
    }
}
