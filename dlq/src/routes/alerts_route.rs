//! `GET /alerts` and `POST /alerts/test` (DESIGN §4, §5 Alarms).
//!
//! The list reads the D1 episodes itself and merges the cannot-store
//! alarm's R2 object (its state is not in D1, which is what it is about);
//! whether a receiver is set, and the test alert, come from the relay,
//! which alone holds `ALERT_WEBHOOK_URL` and the signing secret.

use super::{ApiError, ApiResult, RouteContext};
use hookrelay_core::alarms::cannot_store::{CannotStoreState, OBJECT_KEY};
use hookrelay_core::alarms::machine::Owing;
use hookrelay_core::alarms::{alert_listing, ALERT_RECEIVER_PATH, ALERT_TEST_PATH};
use hookrelay_platform::archive_bucket;
use hookrelay_platform::db::alarms;
use serde_json::{json, Value};

/// At most this many episodes are listed (firing ones first).
const LIMIT: u32 = 200;

/// `GET /alerts`: `{"items": [...], "receiver_configured"}`; resolved
/// episodes are listed for `DLQ_RETENTION`, as long as D1 keeps them.
pub async fn list(c: &RouteContext<'_>) -> ApiResult {
    let since = c.now - c.cfg.dlq.retention.dlq_retention_ms;
    let stored = alarms::recent(c.db, since, LIMIT)
        .await
        .map_err(|source| ApiError::D1 {
            what: "the alarms",
            source,
        })?;
    let cannot = cannot_store_state(c).await?;
    let (status, text) = c
        .relay()?
        .call(ALERT_RECEIVER_PATH, "{}", "the receiver question")
        .await
        .map_err(ApiError::Unavailable)?;
    let receiver: Value = match status {
        200 => serde_json::from_str(&text).unwrap_or(Value::Null),
        _ => Value::Null,
    };
    let configured = receiver
        .get("receiver_configured")
        .cloned()
        .unwrap_or(Value::Null);
    // An unknown answer counts as a receiver: what may be owed is listed.
    let owing = Owing::new(configured != Value::Bool(false), &c.cfg.dlq.retention);
    Ok(json!({
        "items": alert_listing::items(&stored, cannot.as_ref(), since, &owing, c.now),
        "receiver_configured": configured,
    }))
}

async fn cannot_store_state(c: &RouteContext<'_>) -> Result<Option<CannotStoreState>, ApiError> {
    let object = archive_bucket::get(c.env, OBJECT_KEY).await.map_err(|e| {
        ApiError::Unavailable(format!(
            "the R2 bucket ARCHIVE did not answer for {OBJECT_KEY}: {}",
            hookrelay_platform::db::error_message(&e)
        ))
    })?;
    object
        .map(|o| serde_json::from_str(&o.text))
        .transpose()
        .map_err(|e| ApiError::Unavailable(format!("the R2 object {OBJECT_KEY} is not a cannot-store state ({e}); delete it to start over")))
}

/// `POST /alerts/test` (empty body): the relay sends a test alert and this
/// answers `{"sent", "status", "error", "operation_id"}`; without
/// `ALERT_WEBHOOK_URL`, 409 naming it.
pub async fn test(c: &RouteContext<'_>, body: &Value, actor: &str) -> ApiResult {
    if let Some(field) = body.as_object().and_then(|o| o.keys().next()) {
        return Err(ApiError::BadRequest {
            param: field.clone(),
            message: "unknown field; this route takes an empty body".into(),
        });
    }
    let call = json!({ "actor": actor }).to_string();
    let (status, text) = c
        .relay()?
        .call(ALERT_TEST_PATH, &call, "the test alert")
        .await
        .map_err(ApiError::Unavailable)?;
    let answer: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
    match status {
        200 => Ok(answer),
        409 => Err(ApiError::Conflict(
            answer["error"]["message"]
                .as_str()
                .unwrap_or("ALERT_WEBHOOK_URL is not set")
                .to_string(),
        )),
        _ => Err(ApiError::Unavailable(format!(
            "the relay refused the test alert ({status}): {}",
            hookrelay_core::support::redact::truncate(&text, 300)
        ))),
    }
}
