//! What every message of a transfer response shares: the header and the
//! question echoed from the request, and the server's OPT record.

use lode_wire::message::{self, flags, Edns, MessageWriter, Query, Question};
use lode_wire::NameRef;

/// Knot starts a new message once one exceeds the reach of a compression
/// pointer (`KNOT_WIRE_PTR_MAX`, axfr.c `axfr_put_rrsets`, ixfr.c
/// `ixfr_put_chg_part`): names further on could not be compressed.
pub(crate) const PTR_MAX: usize = 0x3FFF;

/// The request a transfer answers, as every response message echoes it.
#[derive(Debug, Clone, Copy)]
pub struct Request {
    /// The request's ID.
    pub id: u16,
    /// The request's 16 flag bits (the OPCODE and RD are echoed).
    pub flags: u16,
    /// The question as received (case kept; IXFR stays IXFR in an AXFR-style answer).
    pub question: Question,
    /// The OPT record to put in every message (the server's: its payload size,
    /// the DO bit echoed), when the request had one; the caller decides.
    pub opt: Option<Edns>,
}

impl Request {
    /// The request of a parsed query (None without a question); no OPT.
    pub fn from_query(q: &Query) -> Option<Request> {
        Some(Request {
            id: q.id,
            flags: q.flags,
            question: q.question?,
            opt: None,
        })
    }

    /// Starts one response message: Knot's `knot_pkt_init_response`
    /// (pkt.c) copies the query header and question, keeps OPCODE and RD,
    /// clears AA, TC, AD, RA, Z and CD. Knot 3.2 does not set AA in
    /// transfer answers (axfr.c/ixfr.c: only from 3.3 on), so neither does Lode.
    /// Every message repeats the question (process_query.c `prepare_answer`
    /// runs for each message of a multi-message answer).
    pub(crate) fn begin<'b>(&self, buf: &'b mut [u8], limit: usize) -> Option<MessageWriter<'b>> {
        let mut w = MessageWriter::new(buf, limit).ok()?;
        w.set_header(self.id, flags::QR | (self.flags & (0x7800 | flags::RD)));
        let reserve = if self.opt.is_some() {
            message::opt_len(0)
        } else {
            0
        };
        w.set_limit(limit.saturating_sub(reserve));
        w.put_question(&self.question).ok()?;
        Some(w)
    }

    /// Ends a message started with [`Request::begin`]: the OPT record in the
    /// room kept for it, the section counts; returns the length.
    pub(crate) fn end(&self, mut w: MessageWriter<'_>, limit: usize) -> usize {
        w.set_limit(limit);
        if let Some(e) = self.opt {
            // Room was kept for it in `begin`.
            let _ = w.put_opt(e.udp_size, e.ext_rcode, e.version, e.flags, &[]);
        }
        w.finish()
    }
}

/// The owner hint Knot's rrset-wire.c `write_owner` takes by itself: when an
/// RRset's owner is, byte for byte, the name compression currently refers
/// to (the previous RRset's owner, unless RDATA names came after it), the
/// owner is written as a pointer to it and RDATA is compressed against it.
pub(crate) fn owner_hint(w: &MessageWriter<'_>, owner: NameRef<'_>) -> u16 {
    let Some(at) = w.reference() else {
        return 0;
    };
    // Compared where it lies in the message: no copy of the name per RRset.
    if lode_wire::name::equals_at(w.written(), at as usize, owner) {
        at
    } else {
        0
    }
}
