//! lode-engine.
#![forbid(unsafe_code)]
