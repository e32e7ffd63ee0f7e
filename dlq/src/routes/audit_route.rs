//! `GET /audit`: the replay audit log, newest first, optionally for one entry.
//! The answer says how far back D1 holds it (DESIGN §5): the sweep moves
//! records older than `DLQ_RETENTION` to the archive, so an empty page past
//! that point is not "no decisions were made".

use super::list_page::list_page;
use super::ApiResult;
use hookrelay_core::admin::query::{parse_audit_filter, parse_page, Cursor};
use hookrelay_core::state::ArchiveTable;
use hookrelay_platform::db::replay_audit;
use worker::D1Database;

/// Lists audit records, with `held_since` (unix ms: D1 holds the records
/// from then on), `retention_ms` and `archived_under` (the R2 prefix of
/// older ones).
pub async fn list(
    db: &D1Database,
    params: &[(String, String)],
    dlq_retention_ms: i64,
    now: i64,
) -> ApiResult {
    let filter = parse_audit_filter(params)?;
    let page = parse_page(params)?;
    let rows = replay_audit::list(db, &filter, page.cursor.as_ref(), page.limit).await?;
    let mut answer = list_page(rows, page.limit, |r| Cursor {
        at_ms: r.at,
        id: r.id.to_string(),
    });
    answer["held_since"] = (now - dlq_retention_ms).into();
    answer["retention_ms"] = dlq_retention_ms.into();
    answer["archived_under"] = format!("{}/", ArchiveTable::Audit.as_str()).into();
    Ok(answer)
}
