//! The wall clock, one reading for the whole server (`lode_io::clock`).

pub(crate) use lode_io::clock::unix_now;
