//! `POST /internal/v1/replay`: a replay the DLQ worker hands over, carried
//! out here with the relay's own `SOURCES` and delivery settings.
//!
//! The DLQ worker reaches this through its `RELAY` service binding, which
//! lands on this public fetch handler; so the caller is proven with a
//! short-lived token signed by `RELAY_INTERNAL_SECRET`, and every other
//! caller is refused before the body is looked at.

use crate::internal_auth;
use crate::responses;
use hookrelay_core::config::RelayConfig;
use hookrelay_core::error_code::Failure;
use hookrelay_core::metrics::Component;
use hookrelay_core::queued_event::decode_value;
use hookrelay_core::replay_call::{ReplayAnswer, ReplayCall};
use hookrelay_core::replay_verdict::{refusal, verdict};
use hookrelay_core::state::DownstreamResult;
use hookrelay_platform::now_ms;
use hookrelay_platform::pipeline::{self, Item};
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
    Response::from_json(&answer)
}

/// Runs the pipeline for the entry's event, unless the replay must be refused.
async fn replay(env: &Env, cfg: &RelayConfig, call: &ReplayCall) -> Result<ReplayAnswer> {
    let failed = |failure: Failure| ReplayAnswer {
        downstream: DownstreamResult::NotForwarded,
        failure: Some(failure),
        refused: None,
        refusal_code: None,
    };
    let event = match decode_value(&call.event) {
        Ok(e) => e,
        Err(f) => return Ok(failed(f)),
    };
    let source = event.source.as_str();
    let known = cfg.sources.contains_key(source);
    if let Some(why) = refusal(
        source,
        known,
        cfg.delivery.forwards(source),
        call.entry_code,
    ) {
        return Ok(ReplayAnswer {
            downstream: DownstreamResult::NotForwarded,
            failure: None,
            refused: Some(why),
            refusal_code: None,
        });
    }
    let db = env.d1("DB")?;
    let item = Item {
        event: &event,
        queue_message_id: &call.queue_message_id,
    };
    let processed = pipeline::run(&db, &[item], &cfg.delivery, Component::Replay, now_ms()).await;
    hookrelay_platform::metrics::flush(env).await;
    Ok(match processed.into_iter().next() {
        Some(p) => ReplayAnswer {
            downstream: p.downstream,
            failure: verdict(&p.outcome, p.downstream).err(),
            refused: None,
            refusal_code: None,
        },
        None => failed(Failure::new(
            hookrelay_core::error_code::ErrorCode::Unknown,
            "the pipeline returned no result",
        )),
    })
}
