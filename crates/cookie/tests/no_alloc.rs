//! The per-query calls allocate nothing: a counting allocator proves it.

use std::net::IpAddr;

use lode_cookie::{Cookies, Refresh, Secrets, Transport, RESPONSE_LEN};

#[global_allocator]
static GLOBAL: lode_testalloc::Counting = lode_testalloc::Counting;

#[test]
fn process_allocates_nothing() {
    let cookies = Cookies::new(Secrets::new([1; 16]), Refresh::After(1800), 3);
    cookies.secrets().rotate([2; 16]);
    let v4: IpAddr = "192.0.2.1".parse().unwrap();
    let v6: IpAddr = "2001:db8::1".parse().unwrap();
    let mut learned = [0u8; RESPONSE_LEN];
    cookies.process(Some(&[7; 8]), v4, Transport::Stream, 1000, &mut learned);
    let options: [&[u8]; 5] = [&[7; 8], &learned, &[7; 24], &[7; 12], &[7; 40]];
    let mut out = [0u8; RESPONSE_LEN];
    lode_testalloc::assert_installed();
    let ((), allocs) = lode_testalloc::count(|| {
        for now in [1000, 3000, 9000] {
            for opt in options {
                for ip in [v4, v6] {
                    for t in [Transport::Udp, Transport::Stream] {
                        cookies.process(Some(opt), ip, t, now, &mut out);
                    }
                }
            }
            cookies.process(None, v4, Transport::Udp, now, &mut out);
        }
    });
    assert_eq!(allocs, 0);
}
