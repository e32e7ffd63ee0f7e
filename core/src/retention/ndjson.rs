//! Archive objects are NDJSON: one row per line, each a JSON object of
//! column name to value exactly as D1 returned it, so
//! `wrangler r2 object get … | jq` reads them and a row decodes back to the
//! same values.

use serde_json::{Map, Value};

/// One row: column name to value.
pub type Row = Map<String, Value>;

/// The object text for `rows`: each row on its own line, `\n`-terminated.
/// JSON escapes every newline inside a value, so a line is always one row.
pub fn encode_rows(rows: &[Row]) -> String {
    let mut out = String::new();
    for row in rows {
        out.push_str(&serde_json::to_string(row).expect("a JSON map always serializes"));
        out.push('\n');
    }
    out
}

/// The rows of an object's text. A line that is not a JSON object is an
/// error naming its line number (an object someone edited, or a truncated
/// read), never a silently shorter list. Blank lines are skipped.
pub fn decode_rows(text: &str) -> Result<Vec<Row>, String> {
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(i, line)| match serde_json::from_str::<Value>(line) {
            Ok(Value::Object(row)) => Ok(row),
            Ok(_) => Err(format!("archive line {} is not a JSON object", i + 1)),
            Err(e) => Err(format!("archive line {} is not JSON: {e}", i + 1)),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn row(v: Value) -> Row {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn rows_roundtrip_to_the_same_values() {
        let rows = vec![
            row(
                json!({"event_id": "evt_1", "body": "{\"a\":1}\nsecond line", "body_ref": null,
                "ingested_at": 1_796_300_000_000_i64, "duplicate_count": 0, "headers": "{\"x\":\"é 😀\"}"}),
            ),
            row(json!({"id": 17, "message": "tab\there \"quoted\" \u{2028}", "cause": null})),
            row(json!({})),
        ];
        let text = encode_rows(&rows);
        assert_eq!(text.lines().count(), 3);
        assert!(text.ends_with('\n'));
        assert_eq!(decode_rows(&text).unwrap(), rows);
        assert_eq!(encode_rows(&[]), "");
        assert_eq!(decode_rows("").unwrap(), Vec::<Row>::new());
    }

    #[test]
    fn a_line_that_is_not_a_row_is_an_error_naming_it() {
        for (text, line) in [
            ("{}\n[1]\n", "line 2"),
            ("{}\n{}\n{\"a\":", "line 3"),
            ("7", "line 1"),
        ] {
            let e = decode_rows(text).unwrap_err();
            assert!(e.contains(line), "{text:?}: {e}");
        }
    }
}
