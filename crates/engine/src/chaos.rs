//! The CH class identity names (RFC 4892), as Knot DNS answers them: TXT
//! queries for `id.server.`/`hostname.bind.` get the identity,
//! `version.server.`/`version.bind.` the version; one TXT string (cut at 255
//! octets), TTL 0, no AA. Anything else in CH, or a name whose text is not
//! set, is REFUSED by the caller.

use lode_wire::message::{flags, MessageWriter, Query, Question, Section};
use lode_wire::{Class, NameRef, Rtype};

use crate::answer::QNAME_POS;
use crate::edns::OptPlan;
use crate::{AnswerKind, Answered, Settings};

/// Names answered with the identity.
const IDENTITY_NAMES: [&[u8]; 2] = [b"\x02id\x06server\x00", b"\x08hostname\x04bind\x00"];
/// Names answered with the version.
const VERSION_NAMES: [&[u8]; 2] = [b"\x07version\x06server\x00", b"\x07version\x04bind\x00"];

/// The text a CH question is answered with, if any.
pub(crate) fn text<'s>(question: &Question, settings: &'s Settings) -> Option<&'s str> {
    if question.qtype != Rtype::TXT {
        return None;
    }
    let name = question.qname.as_ref();
    let is = |names: &[&[u8]; 2]| {
        names
            .iter()
            .any(|n| NameRef::from_wire(n).is_ok_and(|n| n == name))
    };
    let text = if is(&IDENTITY_NAMES) {
        settings.identity.as_deref()
    } else if is(&VERSION_NAMES) {
        settings.version.as_deref()
    } else {
        None
    };
    text.filter(|t| !t.is_empty())
}

/// Writes the TXT answer `text` to a CH question.
pub(crate) fn answer<'z>(
    q: &Query,
    question: &Question,
    text: &str,
    out: &mut [u8],
    limit: usize,
    opt: Option<&OptPlan<'_>>,
) -> Answered<'z> {
    let Ok(mut w) = MessageWriter::new(out, limit) else {
        return Answered::DROP;
    };
    w.set_header(q.id, crate::answer::response_flags(q.flags));
    w.set_limit(limit.saturating_sub(opt.map_or(0, |o| o.reserve(&[]))));
    let bytes = &text.as_bytes()[..text.len().min(255)];
    let mut rdata = [0u8; 256];
    rdata[0] = bytes.len() as u8;
    rdata[1..=bytes.len()].copy_from_slice(bytes);
    let rdata = &rdata[..=bytes.len()];
    if w.put_question(question).is_err()
        || w.put_rrset(
            Section::Answer,
            question.qname.as_ref(),
            QNAME_POS,
            Rtype::TXT,
            Class::CH,
            0,
            std::iter::once(rdata),
        )
        .is_err()
    {
        w.set_flags(flags::TC);
    }
    w.set_limit(limit);
    if let Some(o) = opt {
        let _ = o.put(&mut w, 0, &[]);
    }
    Answered {
        len: w.finish(),
        rcode: 0,
        kind: AnswerKind::Positive,
        zone: None,
        wildcard: false,
        asked: None,
        sign: false,
    }
}
