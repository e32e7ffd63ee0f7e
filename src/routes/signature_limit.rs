//! The relay's side of the limit on failing signature checks
//! (`hookrelay_core::receive::signature_limit`): the isolate's blocked (source,
//! address) pairs, consulted before a body is read, and each failed check
//! counted on the rate-limiting binding, which blocks the pair once over.

use hookrelay_core::metrics::Component;
use hookrelay_core::receive::front_door::Rejection;
use hookrelay_core::receive::signature_limit::{limit_key, Blocked, BINDING};
use hookrelay_platform::{log, signature_limit_binding};
use std::cell::RefCell;
use worker::Env;

thread_local! {
    static BLOCKED: RefCell<Blocked> = RefCell::new(Blocked::default());
}

/// The 429 for a (source, address) still blocked at `now_ms`, if it is.
pub fn still_blocked(source: &str, ip: Option<&str>, now_ms: i64) -> Option<Rejection> {
    BLOCKED.with(|b| {
        let b = b.borrow();
        if b.is_empty() {
            return None;
        }
        b.retry_after_s(&limit_key(source, ip), now_ms)
            .map(|retry_after_s| Rejection::SignatureRateLimited { retry_after_s })
    })
}

/// Counts one failed check of `source` from `ip`: the 429 when this one
/// went over the limit (the pair is then blocked for a period), else
/// `None` (the 401 stands). A limiter that cannot be reached is logged and
/// leaves the 401: the request failed its check either way.
pub async fn count_failure(
    env: &Env,
    source: &str,
    ip: Option<&str>,
    now_ms: i64,
) -> Option<Rejection> {
    let key = limit_key(source, ip);
    match signature_limit_binding::under_limit(env, BINDING, &key).await {
        Ok(true) => None,
        Ok(false) => {
            BLOCKED.with(|b| b.borrow_mut().block(&key, now_ms));
            log::warn(
                Component::Relay,
                "signature_rate_limited",
                log::fields! {"source": source, "key": key},
            );
            still_blocked(source, ip, now_ms)
        }
        Err(e) => {
            log::error(
                Component::Relay,
                "signature_limit_failed",
                log::fields! {"source": source, "err": e},
            );
            None
        }
    }
}
