//! UPDATE forwarding (Knot's behaviour for a secondary zone): an update the
//! zone's ACL allows goes to the first primary over TCP, without the
//! client's TSIG and signed with the primary's key if it has one; the
//! primary's answer comes back without its TSIG, signed for the client.
//! A primary that cannot be reached, or whose answer fails its TSIG check:
//! SERVFAIL.

use std::net::SocketAddr;
use std::time::Duration;

use lode_tsig::{Key, MacBuf};
use lode_wire::{rcode, Name};

use crate::fetch::{self, Source};

use super::reply;
use crate::clock::unix_now;

/// How long the primary gets to answer a forwarded update.
const FORWARD_TIMEOUT: Duration = Duration::from_secs(10);

/// Forwards `msg` to `src` and answers the client through `later`.
pub(crate) fn forward(
    msg: Vec<u8>,
    zone: Name,
    peer: SocketAddr,
    signed: Option<(Key, MacBuf)>,
    src: Source,
    later: lode_io::Later,
) {
    let mut out = vec![0u8; 65535];
    let answer = match exchange(&msg, &src) {
        Ok(resp) => {
            let code = resp.get(3).map_or(0, |b| u16::from(b & 0x0F));
            tracing::info!(
                "update for {zone} from {peer}: forwarded to {}, answered {}",
                src.addr,
                rcode::name(code)
            );
            let n = resp.len().min(out.len());
            out[..n].copy_from_slice(&resp[..n]);
            match &signed {
                Some(s) => super::sign_reply(&mut out, n, s),
                None => n,
            }
        }
        Err(e) => {
            tracing::warn!("update for {zone} from {peer}: not forwarded ({e}), SERVFAIL");
            reply(&msg, rcode::SERVFAIL, signed.as_ref(), &mut out)
        }
    };
    later.send(&out[..answer]);
}

/// Why an update was not forwarded (answered SERVFAIL).
#[derive(Debug, thiserror::Error)]
enum ForwardError {
    /// The request could not be signed with the primary's key.
    #[error("cannot sign for the primary: {0:?}")]
    Sign(#[source] lode_tsig::SignError),
    /// The exchange with the primary failed (its address and the cause).
    #[error(transparent)]
    Fetch(#[from] fetch::FetchError),
    /// The primary's answer is not signed by its key.
    #[error("the primary's answer fails its TSIG check: {0}")]
    Tsig(#[source] lode_tsig::VerifyError),
}

/// The primary's answer to `msg`, TSIG handled as the module note says.
fn exchange(msg: &[u8], src: &Source) -> Result<Vec<u8>, ForwardError> {
    let mut request = msg.to_vec();
    lode_tsig::strip_tsig(&mut request);
    let mac = match &src.key {
        Some(k) => Some(
            lode_tsig::sign_request_vec(&mut request, k, unix_now()).map_err(ForwardError::Sign)?,
        ),
        None => None,
    };
    let mut resp = fetch::exchange_tcp(src, &request, FORWARD_TIMEOUT)?;
    if let (Some(k), Some(mac)) = (&src.key, &mac) {
        lode_tsig::verify_response(&resp, k, mac.as_slice(), unix_now())
            .map_err(ForwardError::Tsig)?;
    }
    lode_tsig::strip_tsig(&mut resp);
    Ok(resp)
}
