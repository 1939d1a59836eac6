//! lode-bench.
#![forbid(unsafe_code)]
