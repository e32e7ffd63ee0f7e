//! The route filter matcher: the input is a filter (first line, JSON),
//! headers (second line, `name:value` pairs separated by tabs) and a body
//! (the rest, seen both as JSON and as a form). Matching never panics;
//! `$not` is the exact negation, `$and`/`$or` of one pattern are the
//! pattern; header names match whatever their case; and `evaluate` parts
//! the routes into matched and unmatched, in order.
#![no_main]

use hookrelay_core::route::{evaluate_routes, Route, Routed};
use hookrelay_core::route::filter::{body_value, headers_value, parse_filter, Filter};
use libfuzzer_sys::fuzz_target;
use serde_json::{json, Value};

const FORM: Option<&str> = Some("application/x-www-form-urlencoded");
const JSON: Option<&str> = Some("application/json");

fn parsed(raw: Value) -> Option<Filter> {
    parse_filter(&raw).ok()
}

fn part_variants(raw: &Value, part: &str, headers: &Value, body: Option<&Value>, base: bool) {
    let Some(p) = raw.get(part) else {
        return;
    };
    let with = |pattern: Value| {
        let mut f = raw.clone();
        f[part] = pattern;
        parsed(f).map(|f| f.matches(headers, body))
    };
    // Too deep to wrap: refused, which the parser target checks.
    if let Some(negated) = with(json!({"$not": p})) {
        let other = if part == "body" { "headers" } else { "body" };
        // `$not` negates its part only; with the other part absent it is
        // the whole filter's negation.
        if raw.get(other).is_none() && (part == "headers" || body.is_some()) {
            assert_eq!(negated, !base, "$not of {p}");
        }
    }
    if let Some(and) = with(json!({"$and": [p]})) {
        assert_eq!(and, base, "$and of {p}");
    }
    if let Some(or) = with(json!({"$or": [p]})) {
        assert_eq!(or, base, "$or of {p}");
    }
}

fuzz_target!(|data: &[u8]| {
    let mut parts = data.splitn(3, |b| *b == b'\n');
    let (Some(filter), headers, body) = (parts.next(), parts.next(), parts.next()) else {
        return;
    };
    let Ok(raw) = serde_json::from_slice::<Value>(filter) else {
        return;
    };
    let Some(f) = parsed(raw.clone()) else {
        return;
    };
    let pairs: Vec<(String, String)> = String::from_utf8_lossy(headers.unwrap_or_default())
        .split('\t')
        .filter_map(|p| p.split_once(':'))
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect();
    let cased = |case: fn(&str) -> String| -> Vec<(String, String)> {
        pairs.iter().map(|(n, v)| (case(n), v.clone())).collect()
    };
    let (upper, lower) = (
        cased(|n| n.to_ascii_uppercase()),
        cased(|n| n.to_ascii_lowercase()),
    );
    let body = body.unwrap_or_default();
    let h = headers_value(&pairs);
    for ct in [JSON, FORM] {
        let b = body_value(body, ct);
        let base = f.matches(&h, b.as_ref());
        for other in [&upper, &lower] {
            assert_eq!(
                f.matches(&headers_value(other), b.as_ref()),
                base,
                "header case"
            );
        }
        part_variants(&raw, "body", &h, b.as_ref(), base);
        part_variants(&raw, "headers", &h, b.as_ref(), base);
        let routes = [
            Route {
                to: "a".into(),
                filter: Some(f.clone()),
            },
            Route {
                to: "b".into(),
                filter: None,
            },
        ];
        let want = if base {
            (vec!["a".to_string(), "b".to_string()], vec![])
        } else {
            (vec!["b".to_string()], vec!["a".to_string()])
        };
        assert_eq!(
            evaluate_routes(&routes, &pairs, body, ct),
            Routed::Routed {
                matched: want.0,
                unmatched: want.1
            }
        );
    }
});
