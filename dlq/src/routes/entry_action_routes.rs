//! `POST /webhook-dlq/:id/{archive,unarchive,discard}` with a strict
//! `{"reason"}` body.

use super::{ApiError, ApiResult};
use crate::entries::apply_action::{apply, ActionContext, ActionError};
use hookrelay_core::dead_letter::entry_action::EntryAction;
use hookrelay_core::replay::plan::parse_reason_body;
use hookrelay_platform::db::dead_letters;
use serde_json::Value;
use worker::D1Database;

/// Who decides, as the router knows it.
pub struct Caller<'a> {
    /// The token subject.
    pub actor: &'a str,
    /// The clock.
    pub now_ms: i64,
    /// The worker's bindings (the R2 archive a discard erases).
    pub env: &'a worker::Env,
}

impl<'a> Caller<'a> {
    /// The context of a decision this caller makes for `reason`.
    pub fn context<'r>(&self, reason: &'r str) -> ActionContext<'r>
    where
        'a: 'r,
    {
        ActionContext {
            actor: self.actor,
            reason,
            job_id: None,
            now_ms: self.now_ms,
            env: self.env,
        }
    }
}

/// Applies the decision `segment` names to one entry. The body is checked before the entry
/// is read, so a malformed request is a 400 whatever the id.
pub async fn decide(
    db: &D1Database,
    id: &str,
    segment: &str,
    body: &Value,
    caller: &Caller<'_>,
) -> ApiResult {
    let action = EntryAction::parse(segment).ok_or_else(|| {
        ApiError::NotFound(format!(
            "no decision '{segment}'; the decisions are archive, unarchive and discard"
        ))
    })?;
    let reason = parse_reason_body(body)?;
    let entry = dead_letters::get(db, id)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no dead-letter entry '{id}'")))?;
    let ctx = caller.context(&reason);
    match apply(db, &entry.summary, action, &ctx).await {
        Ok(result) => Ok(serde_json::to_value(result).unwrap_or(Value::Null)),
        Err(ActionError::Refused(why) | ActionError::RefusedAs(_, why)) => {
            Err(ApiError::Conflict(why))
        }
        Err(ActionError::Storage(e)) => Err(e.into()),
    }
}
