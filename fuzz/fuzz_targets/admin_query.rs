//! The admin API's query parsing on arbitrary strings: `decode_cursor`,
//! `parse_since`, `parse_limit`, `parse_page` and the filters never panic; a
//! cursor that decodes re-encodes to one that decodes equal; any cursor we
//! encode decodes back to itself; and a filter that accepts a list of pairs
//! names only parameters its listing declares.
#![no_main]

use hookrelay_core::admin::query::{
    dead_letter_filter_from_json, decode_cursor, encode_cursor, parse_audit_filter, parse_cursor,
    parse_dead_letter_filter, parse_event_filter, parse_limit, parse_page, parse_since, Cursor,
    AUDIT_PARAMS, DEAD_LETTER_PARAMS, EVENT_PARAMS, MAX_CURSOR_LEN, MAX_LIMIT,
};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let text = text.as_ref();

    // The whole input as a cursor.
    if let Ok(cursor) = decode_cursor(text) {
        let again = encode_cursor(&cursor);
        assert_eq!(
            decode_cursor(&again),
            Ok(cursor.clone()),
            "re-encoded {again}"
        );
        assert_eq!(parse_cursor(Some(text)), Ok(Some(cursor)));
    }

    // Any cursor we issue comes back as itself: the first 8 bytes are the
    // time, the rest the id.
    if data.len() >= 8 {
        let (at, id) = data.split_at(8);
        let cursor = Cursor {
            at_ms: i64::from_le_bytes(at.try_into().expect("8 bytes")),
            id: String::from_utf8_lossy(id).into_owned(),
        };
        let encoded = encode_cursor(&cursor);
        if encoded.len() <= MAX_CURSOR_LEN {
            assert_eq!(decode_cursor(&encoded), Ok(cursor), "{encoded}");
        }
    }

    // The whole input as a `since` and as a `limit`.
    let since = parse_since(text, "since");
    if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
        assert_eq!(since.is_ok(), text.parse::<i64>().is_ok());
    }
    if let Ok(limit) = parse_limit(Some(text)) {
        assert!((1..=MAX_LIMIT).contains(&limit), "{limit}");
    }

    // The input as query pairs: `name=value` lines.
    let pairs: Vec<(String, String)> = text
        .lines()
        .map(|line| {
            let (name, value) = line.split_once('=').unwrap_or((line, ""));
            (name.to_string(), value.to_string())
        })
        .collect();
    let only = |accepted: &[&str]| pairs.iter().all(|(n, _)| accepted.contains(&n.as_str()));
    if parse_dead_letter_filter(&pairs).is_ok() {
        assert!(only(&DEAD_LETTER_PARAMS), "{pairs:?}");
    }
    if parse_event_filter(&pairs).is_ok() {
        assert!(only(&EVENT_PARAMS), "{pairs:?}");
    }
    if parse_audit_filter(&pairs).is_ok() {
        assert!(only(&AUDIT_PARAMS), "{pairs:?}");
    }
    if let Ok(page) = parse_page(&pairs) {
        assert!((1..=MAX_LIMIT).contains(&page.limit), "{}", page.limit);
    }
    for (name, value) in &pairs {
        match name.as_str() {
            "limit" => {
                let _ = parse_limit(Some(value));
            }
            "cursor" => {
                let _ = parse_cursor(Some(value));
            }
            "since" => {
                let _ = parse_since(value, "since");
            }
            _ => {}
        }
    }

    // The input as the JSON filter of replay-all.
    if let Ok(value) = serde_json::from_slice::<Value>(data) {
        let _ = dead_letter_filter_from_json(&value);
    }
});
