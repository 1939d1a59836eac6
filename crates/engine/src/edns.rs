//! The response's OPT record (RFC 6891): fixed fields, then the options in
//! Knot DNS's order — NSID (RFC 5001), the server's extra options (COOKIE),
//! EDE (RFC 8914), EXPIRE (RFC 7314) in answers from a zone when asked,
//! Padding (RFC 7830) last, sized after everything else.

use lode_wire::message::{edns_option, opt_len, Edns, Full, MessageWriter, EDNS_DO};

use crate::{Extra, Settings, Transport};

/// Block size of response padding (RFC 8467 §4.1, Knot's default).
const PAD_BLOCK: usize = 468;
/// Zeros to copy padding from.
const ZEROS: [u8; PAD_BLOCK] = [0; PAD_BLOCK];

/// What the OPT record of one response carries besides its fixed fields.
#[derive(Debug, Clone, Copy)]
pub(crate) struct OptPlan<'a> {
    /// The query's EDNS parameters.
    edns: Edns,
    /// NSID data when the query asked for it and one is configured.
    nsid: &'a [u8],
    /// Whole options from the server (COOKIE).
    extra: &'a [u8],
    /// Pad the response (TCP, padded query, padding on).
    pad: bool,
    max_udp_payload: u16,
    /// The query carries the EXPIRE option (found in the one pass over its
    /// options).
    asks_expire: bool,
    /// The EXPIRE option's whole wire form (an answer from a zone, when
    /// the query asked): see [`OptPlan::with_expire`].
    expire: Option<[u8; 8]>,
}

impl<'a> OptPlan<'a> {
    /// The plan for a query with EDNS `edns`, read from `query`.
    pub(crate) fn new(
        query: &[u8],
        edns: Edns,
        transport: Transport,
        settings: &'a Settings,
        extra: &Extra<'a>,
    ) -> Self {
        let mut nsid: &[u8] = &[];
        let mut padded = false;
        let mut expire = false;
        if edns.options_len > 0 {
            for (code, _) in edns.options(query) {
                match code {
                    edns_option::NSID => nsid = settings.nsid.as_deref().unwrap_or(&[]),
                    edns_option::PADDING => padded = true,
                    edns_option::EXPIRE => expire = true,
                    _ => {}
                }
            }
        }
        OptPlan {
            edns,
            nsid: &nsid[..nsid.len().min(usize::from(u16::MAX) - 4)],
            extra: extra.options,
            pad: padded && settings.padding && transport == Transport::Tcp,
            max_udp_payload: settings.max_udp_payload.max(512),
            asks_expire: expire,
            expire: None,
        }
    }

    /// The plan of an answer from `zone`, with the EXPIRE option when the
    /// query asked for it: what a secondary's zone has left at `now`
    /// (Unix seconds), a primary's SOA EXPIRE (as Knot DNS tells them);
    /// none from a catalog zone (`slot`'s), which cannot expire (as Knot).
    pub(crate) fn with_expire(
        mut self,
        slot: &lode_zonedb::ZoneSlot,
        zone: &lode_zonedb::Zone,
        now: u64,
    ) -> Self {
        if !self.asks_expire || slot.is_catalog() {
            return self;
        }
        let left = match zone.expire_at() {
            Some(at) => u32::try_from(at.saturating_sub(now)).unwrap_or(u32::MAX),
            None => {
                let soa = zone.soa();
                let r = soa.first();
                // The SOA RDATA ends with serial, refresh, retry, expire, minimum.
                let Some(f) = r.len().checked_sub(8).and_then(|at| r.get(at..at + 4)) else {
                    return self;
                };
                u32::from_be_bytes([f[0], f[1], f[2], f[3]])
            }
        };
        let mut opt = [0u8; 8];
        opt[..4].copy_from_slice(&option_head(edns_option::EXPIRE, 4));
        opt[4..].copy_from_slice(&left.to_be_bytes());
        self.expire = Some(opt);
        self
    }

    /// Bytes to keep free for the OPT record with `ede` (whole EDE option
    /// or empty); padding is not reserved (it only fills what is left).
    pub(crate) fn reserve(&self, ede: &[u8]) -> usize {
        let nsid = if self.nsid.is_empty() {
            0
        } else {
            4 + self.nsid.len()
        };
        let expire = self.expire.map_or(0, |e| e.len());
        opt_len(nsid + self.extra.len() + ede.len() + expire)
    }

    /// Writes the OPT record for RCODE `code` (its upper bits go in the
    /// record), then padding when asked for and there is room.
    pub(crate) fn put(&self, w: &mut MessageWriter<'_>, code: u16, ede: &[u8]) -> Result<(), Full> {
        let nsid_head = option_head(edns_option::NSID, self.nsid.len());
        let nsid: [&[u8]; 2] = if self.nsid.is_empty() {
            [&[], &[]]
        } else {
            [&nsid_head, self.nsid]
        };
        // Padding: the whole response a multiple of the block, when it fits.
        let unpadded = w.len() + self.reserve(ede) + 4;
        let pad_len = (PAD_BLOCK - unpadded % PAD_BLOCK) % PAD_BLOCK;
        let pad_head = option_head(edns_option::PADDING, pad_len);
        let pad: [&[u8]; 2] = if self.pad && unpadded + pad_len <= w.limit() {
            [&pad_head, &ZEROS[..pad_len]]
        } else {
            [&[], &[]]
        };
        let expire: &[u8] = self.expire.as_ref().map_or(&[], |e| &e[..]);
        w.put_opt_parts(
            self.max_udp_payload,
            (code >> 4) as u8,
            0,
            self.edns.flags & EDNS_DO,
            &[nsid[0], nsid[1], self.extra, ede, expire, pad[0], pad[1]],
        )
    }
}

/// An option's code and length.
fn option_head(code: u16, len: usize) -> [u8; 4] {
    let [c0, c1] = code.to_be_bytes();
    let [l0, l1] = (len as u16).to_be_bytes();
    [c0, c1, l0, l1]
}
