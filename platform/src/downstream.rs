//! One signed POST to a downstream, with a timeout.

use futures_util::future::{select, Either};
use hookrelay_core::downstream_response::{classify_status, network_error, timed_out};
use hookrelay_core::error_code::Failure;
use std::time::Duration;
use worker::{AbortController, Delay, Fetch, Headers};

/// Posts `body` to `url` with `headers`. Anything but a 2xx answer within
/// `timeout_ms` is a classified failure; the call is aborted on timeout.
pub async fn post(
    url: &str,
    headers: &[(&str, String)],
    body: &str,
    timeout_ms: u64,
    now_ms: i64,
) -> Result<(), Failure> {
    let h = Headers::new();
    for (name, value) in headers {
        h.set(name, value)
            .map_err(|e| network_error(&crate::db::error_message(&e)))?;
    }
    let controller = AbortController::default();
    let signal = controller.signal();
    let request = crate::post_request::post(url, &h, body)
        .map_err(|e| network_error(&crate::db::error_message(&e)))?;
    let fetch = Fetch::Request(request);
    let call = Box::pin(fetch.send_with_signal(&signal));
    let timer = Box::pin(Delay::from(Duration::from_millis(timeout_ms)));
    let mut expired = false;
    let outcome = match select(call, timer).await {
        Either::Left((Ok(response), _)) => {
            let retry_after = response.headers().get("retry-after").ok().flatten();
            classify_status(response.status_code(), retry_after.as_deref(), now_ms)
        }
        Either::Left((Err(e), _)) => Err(network_error(&crate::db::error_message(&e))),
        Either::Right(((), _)) => {
            expired = true;
            Err(timed_out(timeout_ms))
        }
    };
    if expired {
        controller.abort();
    }
    outcome
}
