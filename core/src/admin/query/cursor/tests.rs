//! Listing cursors: round trips, and refusal of a tampered or foreign cursor.

use super::*;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;

#[test]
fn a_cursor_round_trips() {
    let table = [
        Cursor {
            at_ms: 1_796_061_600_000,
            id: "dlq_01HZX".into(),
        },
        Cursor {
            at_ms: 0,
            id: "".into(),
        },
        Cursor {
            at_ms: i64::MAX,
            id: "demo-stripe:evt_1".into(),
        },
        Cursor {
            at_ms: -1,
            id: "quote \" backslash \\ newline \n".into(),
        },
        Cursor {
            at_ms: 42,
            id: "ünïcødé ✓".into(),
        },
    ];
    for c in table {
        let raw = encode_cursor(&c);
        assert!(raw.starts_with("c1."), "{raw}");
        assert!(
            raw[3..]
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'),
            "{raw} is not url-safe without padding"
        );
        assert_eq!(decode_cursor(&raw), Ok(c.clone()));
        assert_eq!(parse_cursor(Some(&raw)), Ok(Some(c)));
    }
}

#[test]
fn the_cursor_encoding_is_fixed() {
    let c = Cursor {
        at_ms: 1_700_000_000_000,
        id: "dlq_1".into(),
    };
    // printf '{"t":1700000000000,"i":"dlq_1"}' | base64 | tr '+/' '-_' | tr -d '='
    assert_eq!(
        encode_cursor(&c),
        "c1.eyJ0IjoxNzAwMDAwMDAwMDAwLCJpIjoiZGxxXzEifQ"
    );
}

#[test]
fn an_absent_or_empty_cursor_is_the_first_page() {
    assert_eq!(parse_cursor(None), Ok(None));
    assert_eq!(parse_cursor(Some("")), Ok(None));
}

#[test]
fn a_tampered_or_foreign_cursor_is_refused() {
    let good = encode_cursor(&Cursor {
        at_ms: 1_700_000_000_000,
        id: "dlq_1".into(),
    });
    let b64 = |s: &str| format!("c1.{}", URL_SAFE_NO_PAD.encode(s));
    let table = [
        "".to_string(),
        "c1.".into(),
        "c1".into(),
        "garbage".into(),
        good[3..].to_string(),
        format!("c2.{}", &good[3..]),
        format!("C1.{}", &good[3..]),
        good[..good.len() - 1].to_string(),
        format!("{good}="),
        format!("{good}!"),
        good.replace('J', "+"),
        b64("not json"),
        b64("[1700000000000,\"dlq_1\"]"),
        b64(r#"{"t":"1700000000000","i":"dlq_1"}"#),
        b64(r#"{"t":1.5,"i":"dlq_1"}"#),
        b64(r#"{"t":1700000000000}"#),
        b64(r#"{"i":"dlq_1"}"#),
        b64(r#"{"t":1,"i":7}"#),
        b64(r#"{"t":1,"i":"x","extra":true}"#),
        b64(r#"{"t":1,"i":"x","t":2}"#),
        b64(r#"{"t":99999999999999999999,"i":"x"}"#),
        b64(r#"{"t":1,"i":"x"} trailing"#),
        format!("c1.{}", "A".repeat(MAX_CURSOR_LEN)),
        "c1.é".into(),
    ];
    for raw in table {
        let Err(err) = decode_cursor(&raw) else {
            panic!("{raw:?} was accepted");
        };
        assert_eq!(err.param, "cursor", "{raw:?}");
        assert!(
            !err.message.contains(&raw) || raw.is_empty(),
            "{}",
            err.message
        );
    }
}
