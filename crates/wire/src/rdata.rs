//! RDATA layouts: where names sit inside RDATA of each type (compression, additional processing).
