//! The per-query calls allocate nothing: a counting allocator proves it.
#![allow(unsafe_code)] // GlobalAlloc is an unsafe trait; this file only counts and forwards.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::net::IpAddr;

use lode_cookie::{Cookies, Refresh, Secrets, Transport, RESPONSE_LEN};

thread_local! {
    static ALLOCS: Cell<usize> = const { Cell::new(0) };
}

struct Counting;

// SAFETY: forwards every call unchanged to the system allocator.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.with(|a| a.set(a.get() + 1));
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

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
    let before = ALLOCS.with(Cell::get);
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
    assert_eq!(ALLOCS.with(Cell::get) - before, 0);
}
