//! Loopback ports for one cluster's daemons.
//!
//! The ports come from below the kernel's ephemeral range (32768 and up on Linux): the system
//! never hands one of them to a `bind(0)` or an outgoing connection of a parallel test, and they
//! are far from the machine's PostgreSQL (5432). Each process starts at an offset of its own
//! (its pid) and takes a port only if it can bind it right now, so two runs on one machine, or a
//! daemon already listening there, are skipped over.

use std::net::TcpListener;
use std::sync::atomic::{AtomicU32, Ordering};

const FIRST: u32 = 20_000;
const PAST_LAST: u32 = 32_000;

/// The next candidate, as an offset into `FIRST..PAST_LAST`; `u32::MAX` until first used.
static NEXT: AtomicU32 = AtomicU32::new(u32::MAX);

/// A loopback port nothing listens on now.
pub fn free_port() -> u16 {
    let span = PAST_LAST - FIRST;
    let _ = NEXT.compare_exchange(
        u32::MAX,
        std::process::id() * 16 % span,
        Ordering::SeqCst,
        Ordering::SeqCst,
    );
    for _ in 0..span {
        let port = FIRST + NEXT.fetch_add(1, Ordering::SeqCst) % span;
        let port = u16::try_from(port).expect("below 32000");
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free loopback port in {FIRST}..{PAST_LAST}");
}
