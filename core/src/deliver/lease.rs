//! A delivery's lease (`deliveries.state = 'delivering'` with its claim
//! time): how long a holder's claim is honoured before another caller may
//! take the row over. Every path that leases a delivery (the consumers, the
//! drain, a replay) reads the bound from here.

/// How long a `delivering` lease is honoured: the call's own timeout plus a
/// margin for the isolate to write the result. A lease older than this was
/// left by an isolate that died, and is taken over.
pub const LEASE_MARGIN_MS: i64 = 30_000;

/// The claim time before which a `delivering` lease counts as abandoned.
pub fn lease_stale_before(now_ms: i64, timeout_ms: u64) -> i64 {
    now_ms - (timeout_ms as i64 + LEASE_MARGIN_MS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lease_is_stale_after_the_timeout_plus_the_margin() {
        assert_eq!(lease_stale_before(100_000, 10_000), 60_000);
        assert_eq!(lease_stale_before(0, 100), -30_100);
    }
}
