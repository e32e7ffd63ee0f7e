//! `POST /internal/v1/replay`: a replay the DLQ worker hands over, carried
//! out here with the relay's own `SOURCES`, `DESTINATIONS` and delivery
//! settings.
//!
//! - A `delivery` entry (`ReplayCall.destination`, or an original that is
//!   a `DeliveryMessage`) replays to that destination only: an operator's
//!   try, so an open breaker fails it and nothing parks; a delivery
//!   already `delivered` succeeds without a call. A destination no longer
//!   configured is refused (`RefusalCode::DestinationUnknown`, which the
//!   DLQ worker answers with 409), and nothing changes.
//! - An `ingest` entry ingests again and routes; its deliveries are
//!   enqueued and go their own way, so it succeeds once ingested.
//! - A `delivery` entry of a pull destination calls nothing: its delivery
//!   is made pullable again with a fresh budget, which is its success
//!   (`pipeline::pull::revive`, by `deliver::pull::revival`).
//! - A `delivery` replay to a destination with a `rate_per_s` takes its
//!   turn from the destination's shared rate first: it waits for a start
//!   free within `REPLAY_MAX_WAIT_MS`, or is refused as
//!   `RefusalCode::RateLimited` naming the rate (the DLQ worker answers
//!   `429`), nothing changed and no failed replay counted.
//!
//! The DLQ worker reaches this through its `RELAY` service binding, which
//! lands on this public fetch handler; so the caller is proven with a
//! short-lived token signed by `RELAY_INTERNAL_SECRET`, and every other
//! caller is refused before the body is looked at.

use crate::routes::internal_auth;
use crate::routes::responses;
use hookrelay_core::config::RelayConfig;
use hookrelay_core::deliver::deliveries::legacy::legacy_entry_destination;
use hookrelay_core::deliver::deliveries::message::DeliveryMessage;
use hookrelay_core::deliver::pull::Revival;
use hookrelay_core::deliver::rate_slots::{over_rate_message, Slot, REPLAY_MAX_WAIT_MS};
use hookrelay_core::metrics::Component;
use hookrelay_core::parking::Caller;
use hookrelay_core::receive::queued_event::{decode_value, QueuedEvent};
use hookrelay_core::replay::call::{RefusalCode, ReplayAnswer, ReplayCall};
use hookrelay_core::replay::verdict::{refusal, verdict};
use hookrelay_core::retry::disposition::Outcome;
use hookrelay_core::route::Routed;
use hookrelay_core::state::error_code::{ErrorCode, Failure};
use hookrelay_core::state::DownstreamResult;
use hookrelay_platform::db::events;
use hookrelay_platform::pipeline::pull::{self, Replayed};
use hookrelay_platform::pipeline::{self, Item};
use hookrelay_platform::{now_ms, rate_turn};
use worker::{Env, Request, Response, Result};

/// Handles one internal replay call.
pub async fn handle(mut req: Request, env: &Env) -> Result<Response> {
    let admitted = match internal_auth::admit(&req, env, "replays").await {
        Ok(a) => a,
        Err(answer) => return answer,
    };
    let cfg = admitted.config();
    let text = req.text().await.unwrap_or_default();
    let call: ReplayCall = match serde_json::from_str(&text) {
        Ok(c) => c,
        Err(e) => {
            return responses::error(
                400,
                "BAD_REQUEST",
                &format!("the replay call is not valid: {e}"),
            )
        }
    };
    let answer = replay(env, cfg, &call).await?;
    hookrelay_platform::metrics::flush(env).await;
    Response::from_json(&answer)
}

fn failed(failure: Failure) -> ReplayAnswer {
    ReplayAnswer {
        downstream: DownstreamResult::NotForwarded,
        failure: Some(failure),
        refused: None,
        refusal_code: None,
    }
}

fn refused(why: String, refusal: Option<RefusalCode>) -> ReplayAnswer {
    ReplayAnswer {
        downstream: DownstreamResult::NotForwarded,
        failure: None,
        refused: Some(why),
        refusal_code: refusal,
    }
}

fn answer_of(p: &pipeline::Processed) -> ReplayAnswer {
    ReplayAnswer {
        downstream: p.downstream,
        failure: verdict(&p.outcome, p.downstream).err(),
        refused: None,
        refusal_code: None,
    }
}

/// What a replay call names: the event when the original is one (a
/// delivery message carries only the event's identity; its row holds it),
/// the entry's destination, the source and the event id.
struct Target {
    event: Option<QueuedEvent>,
    destination: Option<String>,
    source: String,
    event_id: String,
}

fn target(call: &ReplayCall, cfg: &RelayConfig) -> std::result::Result<Target, Failure> {
    match DeliveryMessage::read(&call.event) {
        Some(Ok(m)) => Ok(Target {
            destination: Some(call.destination.clone().unwrap_or(m.destination)),
            source: m.source,
            event_id: m.event_id,
            event: None,
        }),
        Some(Err(e)) => Err(Failure::new(ErrorCode::SchemaMismatch, e)),
        None => decode_value(&call.event).map(|e| Target {
            // An entry filed before deliveries that failed at its
            // downstream was that source's one delivery.
            destination: call.destination.clone().or_else(|| {
                let own = cfg.delivery.destination(&e.source).is_some();
                legacy_entry_destination(&e.source, call.entry_code, own)
            }),
            source: e.source.clone(),
            event_id: e.event_id.clone(),
            event: Some(e),
        }),
    }
}

/// Refuses the replay before anything is done, when it must be.
fn refused_target(cfg: &RelayConfig, t: &Target, entry_code: ErrorCode) -> Option<ReplayAnswer> {
    let known = cfg.sources.contains_key(&t.source);
    let forwards = t.destination.is_some() || cfg.delivery.forwards(&t.source);
    if let Some(why) = refusal(&t.source, known, forwards, entry_code) {
        return Some(refused(why, None));
    }
    let d = t.destination.as_deref()?;
    cfg.delivery.destination(d).is_none().then(|| {
        let why = format!("destination '{d}' is not configured in the relay (DESTINATIONS, or a source's downstream), so this delivery cannot be replayed; configure it again, or archive the entry");
        refused(why, Some(RefusalCode::DestinationUnknown))
    })
}

async fn replay(env: &Env, cfg: &RelayConfig, call: &ReplayCall) -> Result<ReplayAnswer> {
    let t = match target(call, cfg) {
        Ok(t) => t,
        Err(f) => return Ok(failed(f)),
    };
    if let Some(answer) = refused_target(cfg, &t, call.entry_code) {
        return Ok(answer);
    }
    let db = env.d1("DB")?;
    let now = now_ms();
    // A delivery entry's envelope keeps its event whole, but the event's row
    // is normally still in D1: ingesting it again would count the replay as
    // a duplicate delivery from the provider. Only a swept row comes back.
    let mut t = t;
    if t.event.is_some() && call.destination.is_some() && events::exists(&db, &t.event_id).await? {
        t.event = None;
    }
    if let Some(e) = &t.event {
        if let Some(answer) =
            ingest_again(env, &db, cfg, call, e, t.destination.as_deref(), now).await
        {
            return Ok(answer);
        }
    }
    let Some(d) = t.destination else {
        return Ok(failed(Failure::new(
            ErrorCode::Unknown,
            "nothing to replay",
        )));
    };
    if cfg
        .delivery
        .destination(&d)
        .and_then(|x| x.pull())
        .is_some()
    {
        return revive(&db, &t.event_id, &d, now).await;
    }
    if let Some(answer) = take_turn(&db, cfg, &d).await? {
        return Ok(answer);
    }
    let requests = [(t.event_id, d)];
    let carriers = [(call.queue_message_id.as_str(), 0u32)];
    let processed = pipeline::deliver(
        (&db, env),
        &requests,
        &carriers,
        (&cfg.delivery, &cfg.retry, None),
        (Component::Replay, Caller::Replay),
        now,
        None,
    )
    .await;
    Ok(match processed.first() {
        Some(p) => answer_of(p),
        None => failed(Failure::new(
            ErrorCode::Unknown,
            "the pipeline returned no result",
        )),
    })
}

/// A pull destination's delivery is never called: its replay makes it
/// pullable again with a fresh budget (DESIGN §3), which is its success
/// (§4), unless it was delivered (a success too) or a consumer holds it.
async fn revive(
    db: &worker::D1Database,
    event_id: &str,
    destination: &str,
    now: i64,
) -> Result<ReplayAnswer> {
    let done = |downstream| ReplayAnswer {
        downstream,
        failure: None,
        refused: None,
        refusal_code: None,
    };
    Ok(match pull::revive(db, (event_id, destination), now).await? {
        Replayed::Decided(Revival::Revive) => done(DownstreamResult::NotForwarded),
        Replayed::Decided(Revival::AlreadyDelivered) => done(DownstreamResult::AlreadyDelivered),
        Replayed::Decided(Revival::Held { until }) => failed(Failure::new(
            ErrorCode::Unknown,
            format!("a consumer of pull destination '{destination}' holds this delivery under a lease until {until} (unix ms); its ack settles it: replay again after the lease ends"),
        )),
        Replayed::Missing => failed(Failure::new(
            ErrorCode::Unknown,
            format!("no delivery of this event to pull destination '{destination}' is stored (its row was swept with no copy to ingest again); nothing to make pullable"),
        )),
    })
}

/// Waits for the replay's turn at `destination`'s rate, when it has one;
/// the refusal when no start is free within the replay's short wait.
async fn take_turn(
    db: &worker::D1Database,
    cfg: &RelayConfig,
    destination: &str,
) -> Result<Option<ReplayAnswer>> {
    let Some(rate) = cfg
        .delivery
        .destination(destination)
        .and_then(|d| d.rate_per_s)
    else {
        return Ok(None);
    };
    match rate_turn::take_turn(db, destination, rate, REPLAY_MAX_WAIT_MS).await? {
        Slot::StartAt(_) => Ok(None),
        Slot::Over { next_free_at_ms } => {
            let why = over_rate_message(destination, rate, next_free_at_ms, now_ms());
            Ok(Some(refused(why, Some(RefusalCode::RateLimited))))
        }
    }
}

/// Ingests the entry's event again. For a delivery entry its row comes
/// back if it was swept, with this one delivery (copied, if it predates
/// deliveries), and the replay goes on (`None`); an ingest entry routes
/// as configured, its deliveries are enqueued, and its answer is final.
async fn ingest_again(
    env: &Env,
    db: &worker::D1Database,
    cfg: &RelayConfig,
    call: &ReplayCall,
    event: &QueuedEvent,
    destination: Option<&str>,
    now: i64,
) -> Option<ReplayAnswer> {
    let items = [Item {
        event,
        queue_message_id: &call.queue_message_id,
    }];
    let control = env.queue("CONTROL").ok();
    let control = control.as_ref();
    let (processed, pending) = match destination {
        Some(d) => {
            let only = Routed::Routed {
                matched: vec![d.to_string()],
                unmatched: Vec::new(),
            };
            let out = pipeline::ingest_routed(
                db,
                &items,
                &[only],
                (Component::Replay, control),
                (
                    now,
                    cfg.delivery.message_overdue_ms,
                    &cfg.delivery.pull_names(),
                ),
            )
            .await;
            (out.0, Ok(Vec::new()))
        }
        None => {
            let caller = (Component::Replay, control);
            pipeline::ingest(db, &items, &cfg.delivery, caller, now).await
        }
    };
    let Some(p) = processed.into_iter().next() else {
        return Some(failed(Failure::new(
            ErrorCode::Unknown,
            "the ingest returned no result",
        )));
    };
    if let Outcome::Failed(_) = p.outcome {
        return Some(answer_of(&p));
    }
    if destination.is_some() {
        return None;
    }
    Some(
        match crate::consumers::webhooks::enqueue(env, &items, pending).await {
            Ok(()) => answer_of(&p),
            Err(f) => failed(f),
        },
    )
}
