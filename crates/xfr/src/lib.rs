//! Zone transfers without I/O: the messages of AXFR (RFC 5936) and IXFR
//! (RFC 1995) written from zone versions and changesets, transfer responses
//! read back on the secondary side, and the SOA/AXFR/IXFR/NOTIFY requests.
//!
//! ```text
//!  primary                                             secondary
//!  &Zone ──AxfrWriter──▶ msg, msg, … ─┐     ┌─▶ XfrReader::feed(msg) ─▶ More
//!  [Changeset] ─condense─▶ Changeset   │ TCP │        ├─▶ Done(UpToDate(soa))
//!     └──IxfrWriter──▶ msg, msg, … ────┤     │        ├─▶ Done(Full { soa, records })
//!  soa_only ──▶ one SOA (up to date,  ─┘     │        └─▶ Done(Incremental([Changeset]))
//!               or IXFR over UDP)            │   feed_with(msg, sink): AXFR records
//!                                            │   streamed to a ZoneBuilder instead
//!  parse_notify(msg) ◀── notify(…)           │
//!                        soa_query / axfr_query / ixfr_query ─┘
//! ```
//!
//! Writers fill caller buffers one message at a time, up to a `limit` that
//! leaves room for the caller's TSIG; they hold a cursor into the zone or the
//! changesets, never a copy (O(1) memory in the zone size, nothing allocated
//! per record). The caller signs each message (lode-tsig) and checks the
//! signatures of what it receives before feeding the reader.
//!
//! Formats follow Knot DNS 3.2 (`src/knot/nameserver/{axfr,ixfr,xfr,notify}.c`,
//! `src/knot/events/handlers/{refresh,notify}.c`, `src/knot/query/query.c`);
//! each item says which function it follows and where Lode departs. The
//! tests hold AXFR, IXFR, up-to-date, NOTIFY and AXFR-request bytes captured
//! from knotd 3.2.6 (`testdata/README.md`) and require Lode's to be identical.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod axfr;
mod error;
mod ixfr;
mod query;
mod reader;
mod response;

pub use axfr::AxfrWriter;
pub use error::XfrError;
pub use ixfr::{condense, ixfr_size, soa_only, IxfrWriter};
pub use query::{
    axfr_query, ixfr_query, notify, parse_notify, query, soa_query, Notify, QueryEdns,
};
pub use reader::{Progress, Transfer, XfrReader};
pub use response::Request;

#[cfg(test)]
mod tests;
