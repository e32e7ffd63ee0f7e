//! Writing a row read back from the R2 archive into the table it came
//! from (a restore). The row is data from R2: its column names are checked
//! against the table's (`core::retention::entry_archive::insert_columns`)
//! before they reach SQL, and its values travel as one JSON parameter,
//! read back by `json_extract` with their JSON types (a text column stays
//! byte-equal). Columns the row lacks take the table's defaults.

use super::text;
use hookrelay_core::retention::entry_archive::insert_columns;
use hookrelay_core::retention::ndjson::Row;
use hookrelay_core::state::ArchiveTable;
use worker::{D1Database, D1PreparedStatement, Result};

/// Inserts `row` into `table` (of `known` columns), only under the
/// restore's guard (`super::tombstones::restore_guard`: entry `restoring`
/// is still evicted, and with `capacity`, fewer pending entries than it),
/// so a restore another writer overtook, or one that no longer fits,
/// writes nothing; with `skip_if_key`,
/// nothing when a row with the same value in that key column exists,
/// otherwise such a row fails the statement. A column `table` lacks is an
/// error naming it.
pub fn insert(
    db: &D1Database,
    table: ArchiveTable,
    known: &[&str],
    skip_if_key: Option<&str>,
    row: &Row,
    restoring: &str,
    capacity: Option<u64>,
) -> Result<D1PreparedStatement> {
    let columns = insert_columns(row, known).map_err(worker::Error::RustError)?;
    let values: Vec<String> = columns
        .iter()
        .map(|c| format!("json_extract(?1, '$.{c}')"))
        .collect();
    let conflict = skip_if_key.map_or(String::new(), |k| format!(" ON CONFLICT({k}) DO NOTHING"));
    let sql = format!(
        "INSERT INTO {} ({}) SELECT {} WHERE {}{conflict}",
        table.as_str(),
        columns.join(", "),
        values.join(", "),
        super::tombstones::restore_guard("?2", capacity)
    );
    db.prepare(sql)
        .bind(&[text(&serde_json::to_string(row)?), text(restoring)])
}
