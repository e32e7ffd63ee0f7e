//! `POST /webhook-dlq/:id/restore` with a strict `{"reason"}` body: an
//! evicted or swept entry back from the R2 archive (`crate::entries::restore`).

use super::entry_action_routes::Caller;
use super::{ApiError, ApiResult};
use crate::entries::restore::{restore as restore_entry, RestoreError};
use hookrelay_core::replay::plan::parse_reason_body;
use serde_json::Value;
use worker::D1Database;

/// Restores entry `id` against `capacity`. The body is checked before
/// anything is read, so a malformed request is a 400 whatever the id.
pub async fn restore(
    db: &D1Database,
    id: &str,
    body: &Value,
    capacity: u64,
    caller: &Caller<'_>,
) -> ApiResult {
    let reason = parse_reason_body(body)?;
    let ctx = caller.context(&reason);
    match restore_entry(caller.env, db, id, capacity, &ctx).await {
        Ok(result) => Ok(serde_json::to_value(result).unwrap_or(Value::Null)),
        Err(e) => Err(e.into()),
    }
}

impl From<RestoreError> for ApiError {
    fn from(e: RestoreError) -> Self {
        match e {
            RestoreError::NotFound(m) => ApiError::NotFound(m),
            RestoreError::Refused(r) => ApiError::Refused {
                status: 409,
                code: r.code(),
                message: r.message(),
            },
            RestoreError::Conflict(m) => ApiError::Conflict(m),
            RestoreError::Archive(m) => ApiError::ArchiveUnreadable(m),
            RestoreError::Storage(e) => e.into(),
        }
    }
}
