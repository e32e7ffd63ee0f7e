//! How results look: times as ages with their UTC instant, tables of a
//! few columns, and `--json` (the API's `data` unchanged). On a terminal
//! and off one the lines are the same; only progress bars need one.

use comfy_table::{presets, ContentArrangement, Table};
use hookrelay_core::support::utc::civil_from_days;
use serde_json::Value;
use std::io::IsTerminal;

/// Whether standard output is a terminal (progress bars only then).
pub fn stdout_is_terminal() -> bool {
    std::io::stdout().is_terminal()
}

/// The UTC instant of unix milliseconds, RFC 3339 to the second.
pub fn instant(ms: i64) -> String {
    let (y, m, d) = civil_from_days(ms.div_euclid(86_400_000));
    let s = ms.rem_euclid(86_400_000) / 1000;
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        s / 3600,
        s / 60 % 60,
        s % 60
    )
}

/// A span of milliseconds in its two largest units: `45s`, `3m 20s`,
/// `2h 5m`, `3d 4h`.
pub fn span(ms: i64) -> String {
    let s = ms.unsigned_abs() / 1000;
    let (d, h, m, sec) = (s / 86_400, s / 3600 % 24, s / 60 % 60, s % 60);
    match (d, h, m) {
        (0, 0, 0) => format!("{sec}s"),
        (0, 0, _) if sec == 0 => format!("{m}m"),
        (0, 0, _) => format!("{m}m {sec}s"),
        (0, _, _) if m == 0 => format!("{h}h"),
        (0, _, _) => format!("{h}h {m}m"),
        _ if h == 0 => format!("{d}d"),
        _ => format!("{d}d {h}h"),
    }
}

/// A time as an age with its instant: `3m 20s ago (2026-05-01T12:00:00Z)`,
/// or `in 5m (…)` for a time to come.
pub fn age(at_ms: i64, now_ms: i64) -> String {
    let when = if at_ms <= now_ms {
        format!("{} ago", span(now_ms - at_ms))
    } else {
        format!("in {}", span(at_ms - now_ms))
    };
    format!("{when} ({})", instant(at_ms))
}

/// `age` of an optional JSON time, or `-`.
pub fn age_of(v: &Value, now_ms: i64) -> String {
    v.as_i64().map_or_else(|| "-".into(), |t| age(t, now_ms))
}

/// A JSON value as a table cell: text unquoted, null as `-`, lists joined.
pub fn cell(v: &Value) -> String {
    match v {
        Value::Null => "-".into(),
        Value::String(s) => s.clone(),
        Value::Array(items) if items.is_empty() => "-".into(),
        Value::Array(items) => items.iter().map(cell).collect::<Vec<_>>().join(", "),
        other => other.to_string(),
    }
}

/// A table of `rows` under `header`, columns aligned, no borders.
pub fn table(header: &[&str], rows: Vec<Vec<String>>) -> String {
    let mut t = Table::new();
    t.load_preset(presets::NOTHING)
        .set_content_arrangement(ContentArrangement::Disabled)
        .set_header(header.to_vec());
    for row in rows {
        t.add_row(row);
    }
    for column in t.column_iter_mut() {
        column.set_padding((0, 2));
    }
    t.lines()
        .map(|l| l.trim_end().to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Prints `data` as `--json` does: the API's data unchanged, indented.
pub fn print_json(data: &Value) {
    println!(
        "{}",
        serde_json::to_string_pretty(data).unwrap_or_else(|_| data.to_string())
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn times_read_as_ages_with_their_utc_instant() {
        let now = 1_700_000_000_000;
        let table = [
            (now, "0s ago (2023-11-14T22:13:20Z)"),
            (now - 45_000, "45s ago (2023-11-14T22:12:35Z)"),
            (now - 200_000, "3m 20s ago (2023-11-14T22:10:00Z)"),
            (now - 7_500_000, "2h 5m ago (2023-11-14T20:08:20Z)"),
            (now - 3 * 86_400_000, "3d ago (2023-11-11T22:13:20Z)"),
            (now + 300_000, "in 5m (2023-11-14T22:18:20Z)"),
        ];
        for (at, want) in table {
            assert_eq!(age(at, now), want);
        }
        assert_eq!(instant(0), "1970-01-01T00:00:00Z");
        assert_eq!(age_of(&Value::Null, now), "-");
    }

    #[test]
    fn cells_and_tables_are_plain_text() {
        assert_eq!(cell(&json!(null)), "-");
        assert_eq!(cell(&json!("a")), "a");
        assert_eq!(cell(&json!(["a", "b"])), "a, b");
        assert_eq!(cell(&json!(3)), "3");
        let t = table(
            &["ID", "CODE"],
            vec![vec!["dlq_1".into(), "UPSTREAM_5XX".into()]],
        );
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 2, "{t}");
        assert!(
            lines[0].contains("ID") && lines[1].contains("UPSTREAM_5XX"),
            "{t}"
        );
    }
}
