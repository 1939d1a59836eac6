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
