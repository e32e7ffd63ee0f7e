//! One call to a destination, the one dispatch every path uses (the
//! consumer's batch, a replay, a job's replay and a drain step): what is
//! sent, signed with the destination's key and carrying its credential,
//! to whichever kind of destination it is. Also what the deliver phase and
//! a drain step share about it: what a leased delivery came to
//! ([`Attempt`]), what one batch's run of a destination works with
//! ([`Ctx`]), the body of an event, and the breaker's admission of a lone
//! call.

use super::item::DeliveryItem;
use crate::breaker_store::{admit_call, record_call};
use crate::db::error_message;
use crate::downstream::Via;
use crate::{downstream, log, now_ms};
use hookrelay_core::deliver::breaker::{Admission, ADMISSION_WHEN_UNREADABLE};
use hookrelay_core::deliver::request::signed_headers;
use hookrelay_core::deliver::response::breaker_cause;
use hookrelay_core::deliver::{service_url, DeliveryConfig, Destination, Target};
use hookrelay_core::metrics::Component;
use hookrelay_core::parking::{Caller, ParkCause};
use hookrelay_core::receive::queued_event::{EventBody, QueuedEvent};
use hookrelay_core::state::error_code::{ErrorCode, Failure};
use hookrelay_core::support::vec_map::VecMap;
use wasm_bindgen::JsCast;
use worker::{D1Database, Env};

/// What one leased event came to.
#[derive(Debug, Clone)]
pub enum Attempt {
    /// A call was made (or could not be), with its result.
    Called(Result<(), Failure>),
    /// No call: the delivery is to be parked for `destination`.
    Parked {
        /// The destination's name.
        destination: String,
        /// The failure that opened the breaker, when known.
        cause: Option<ErrorCode>,
        /// When the breaker admits its next probe, when it is open (or,
        /// over the rate, when the rate's next start is free).
        probe_at_ms: Option<i64>,
        /// Why it parks.
        why: ParkCause,
        /// The failed call that parked it, when one was made (a redirect's
        /// names where it points): the event's story tells it.
        answer: Option<Failure>,
    },
    /// No call: the batch's call budget or limits ran out before it could
    /// start (`super::scheduler`); its lease is given back and it goes to
    /// the `deliveries` queue at once, spending nothing.
    HandedOn,
    /// Handed on at the budget's end, its lease given back and its message
    /// sent already (`super::hand_on`): nothing more to do.
    SentOn,
}

/// One finished item: its index and what it came to.
pub type Call = (usize, Attempt);

/// What every destination's run of one batch shares.
pub(super) struct Ctx<'a> {
    pub db: &'a D1Database,
    /// The bindings a destination may be reached through.
    pub env: &'a Env,
    pub items: &'a [DeliveryItem],
    pub stored: VecMap<String, String>,
    pub cfg: &'a DeliveryConfig,
    pub component: Component,
    pub caller: Caller,
    /// Each item's start reserved from its destination's rate (by item
    /// index; `None`: at once).
    pub starts: Vec<Option<i64>>,
    /// The invocation's call scheduler: every call waits for its turn.
    pub scheduler: super::scheduler::Scheduler,
    /// Each rated destination's last real start in this batch (by its
    /// index in the configuration), so a late turn never bunches starts.
    pub last_starts: std::cell::RefCell<VecMap<usize, i64>>,
}

/// The body of `event`: inline, or from the claim-checked bodies loaded.
pub(crate) fn body_of<'a>(
    event: &'a QueuedEvent,
    stored: &'a VecMap<String, String>,
) -> Result<&'a str, Failure> {
    match &event.body {
        EventBody::Inline { body } => Ok(body.as_str()),
        EventBody::Stored { body_ref, .. } => {
            stored.get(body_ref).map(String::as_str).ok_or_else(|| {
                Failure::new(
                    ErrorCode::D1Unavailable,
                    "the claim-checked body could not be loaded from D1",
                )
            })
        }
    }
}

/// The breaker's admission for one call to destination `name` (a drain
/// step), claiming the probe when it is due; an unreadable breaker admits
/// (`ADMISSION_WHEN_UNREADABLE`).
pub(crate) async fn admission(
    db: &D1Database,
    component: Component,
    name: &str,
    cfg: &DeliveryConfig,
) -> Admission {
    match admit_call(db, component, name, now_ms(), &cfg.breaker).await {
        Ok(a) => a,
        Err(e) => {
            log::error(
                component,
                "breaker_unreadable",
                log::fields! {"destination": name, "err": error_message(&e)},
            );
            ADMISSION_WHEN_UNREADABLE
        }
    }
}

/// The failure when no downstream signing key is configured.
pub(crate) fn no_signing_key() -> Failure {
    Failure::new(
        ErrorCode::Unknown,
        "DOWNSTREAM_SIGNING_SECRET is not configured",
    )
}

/// One call to destination `d` with `body`, signed with its key (its own,
/// else `DOWNSTREAM_SIGNING_SECRET`) and carrying its credential. The
/// breaker is not touched: a batch folds its calls into its breaker once
/// (`super::destination_run`), a drain step through [`call`].
pub(crate) async fn call_destination(
    env: &Env,
    event: &QueuedEvent,
    body: &str,
    d: &Destination,
    cfg: &DeliveryConfig,
) -> Result<(), Failure> {
    let (fetcher, url) = match &d.target {
        // A message on the user's own queue: nothing to sign.
        Target::Queue(binding) => {
            return crate::queue_destination::send(env, event, body, (&d.name, binding)).await
        }
        Target::Url(url) => (None, url.clone()),
        // A pull destination's deliveries are stored, never called
        // (DESIGN §3); a path that got here regardless fails without a call.
        Target::Pull(_) => {
            return Err(Failure::new(
                ErrorCode::Unknown,
                format!("destination '{}' is a pull destination: its deliveries are pulled through /api/v1/pull/{}, never called", d.name, d.name),
            ))
        }
        // Checked at startup (`check_bindings`); a binding gone since (a
        // redeploy without it) fails like an unclassified error.
        Target::Service(binding) => match env.service(binding) {
            Ok(f) => (Some(f), service_url(&d.name)),
            Err(_) => return Err(Failure::new(
                ErrorCode::Unknown,
                format!("the service binding `{binding}` of destination '{}' is missing; declare it in the relay's wrangler.toml", d.name),
            )),
        },
    };
    let key = cfg.signing_key_for(d).ok_or_else(no_signing_key)?;
    // The clock is read here, as the request is built: a paced replay or a
    // drain never sends a stale X-Timestamp.
    let sent_at = now_ms();
    let headers = signed_headers(
        &event.event_id,
        &event.idempotency_key,
        &event.source,
        key,
        sent_at.div_euclid(1000),
        body.as_bytes(),
        event.headers.get("content-type").map(String::as_str),
        d.keys.auth.as_ref(),
    );
    let via = match &fetcher {
        Some(f) => Via::Service(f.as_ref().unchecked_ref()),
        None => Via::Network,
    };
    let timeout_ms = u64::from(d.timeout_ms);
    downstream::post_via(via, &url, &headers, body, timeout_ms, sent_at).await
}

/// One call to destination `name`, with its result recorded on its breaker.
pub(crate) async fn call(
    (db, env): (&D1Database, &Env),
    event: &QueuedEvent,
    body: &str,
    name: &str,
    cfg: &DeliveryConfig,
    component: Component,
) -> Result<(), Failure> {
    let Some(d) = cfg.destination(name) else {
        return Err(super::not_configured(name));
    };
    let result = call_destination(env, event, body, d, cfg).await;
    let cause = breaker_cause(&result, d.auth.is_some());
    if let Err(e) = record_call(db, component, name, cause, now_ms(), &cfg.breaker).await {
        log::error(
            component,
            "breaker_unwritable",
            log::fields! {"destination": name, "err": error_message(&e)},
        );
    }
    result
}
