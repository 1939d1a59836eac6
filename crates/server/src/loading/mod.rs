//! Loading: zones read from their files (or snapshots) in parallel, what
//! each load reported, the snapshots themselves, and zone files written
//! back from the served version (`zonefile-sync`).

pub mod file_builder;
pub(crate) mod flush;
pub(crate) mod loads;
pub mod snapshot;
pub mod zones;
