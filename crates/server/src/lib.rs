//! lode-server.
#![forbid(unsafe_code)]
