//! lode-zonefile.
#![forbid(unsafe_code)]
