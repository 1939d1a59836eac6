//! Replication: secondary zones refreshed from their primaries (SOA, IXFR,
//! AXFR in, timers), NOTIFY sent to secondaries after a publication, and
//! catalog zones' members made zones here. Transfers out are served by the
//! writers' journals (`update::xfrout`).

pub(crate) mod consumer;
pub(crate) mod notify;
pub(crate) mod secondary;
