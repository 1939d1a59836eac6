//! lode-zonedb.
#![forbid(unsafe_code)]
