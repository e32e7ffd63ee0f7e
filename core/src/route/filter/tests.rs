//! Table tests of the filter rules (`super`'s doc): each operator,
//! nesting, arrays, header case, forms, and what parse refuses.

use super::*;
use serde_json::{json, Value};

fn filter(raw: Value) -> Filter {
    parse_filter(&raw).unwrap_or_else(|e| panic!("{raw}: {e:?}"))
}

/// Whether `body` (JSON) matches the body pattern `pattern`.
fn body_matches(pattern: &Value, body: &Value) -> bool {
    let f = filter(json!({ "body": pattern }));
    f.matches(&headers_value(&[]), Some(body))
}

fn table(cases: &[(Value, Value, bool)]) {
    for (pattern, body, want) in cases {
        assert_eq!(body_matches(pattern, body), *want, "{pattern} on {body}");
    }
}

#[test]
fn equality_and_eq_compare_without_converting_types() {
    table(&[
        (
            json!({"type": "order.created"}),
            json!({"type": "order.created"}),
            true,
        ),
        (
            json!({"type": "order.created"}),
            json!({"type": "order.paid"}),
            false,
        ),
        (json!({"total": 100}), json!({"total": 100}), true),
        (json!({"total": 100}), json!({"total": 100.0}), true),
        (json!({"total": 100}), json!({"total": "100"}), false),
        (json!({"total": "100"}), json!({"total": 100}), false),
        (json!({"ok": true}), json!({"ok": "true"}), false),
        (json!({"gone": null}), json!({"gone": null}), true),
        (json!({"gone": null}), json!({}), false),
        (json!({"total": {"$eq": 5}}), json!({"total": 5}), true),
        (json!({"total": {"$eq": 5}}), json!({"total": 6}), false),
        (json!({"total": {"$eq": 5}}), json!({}), false),
        (
            json!({"o": {"$eq": {"a": 1}}}),
            json!({"o": {"a": 1}}),
            true,
        ),
        (
            json!({"o": {"$eq": {"a": 1}}}),
            json!({"o": {"a": 1, "b": 2}}),
            false,
        ),
        (json!({"o": {"$eq": {}}}), json!({"o": {}}), true),
    ]);
}

#[test]
fn neq_in_and_nin_are_the_negations_and_a_missing_field_is_not_equal() {
    table(&[
        (json!({"t": {"$neq": "a"}}), json!({"t": "b"}), true),
        (json!({"t": {"$neq": "a"}}), json!({"t": "a"}), false),
        (json!({"t": {"$neq": "a"}}), json!({}), true),
        (json!({"t": {"$neq": 1}}), json!({"t": "1"}), true),
        (json!({"t": {"$in": ["a", "b"]}}), json!({"t": "b"}), true),
        (json!({"t": {"$in": ["a", "b"]}}), json!({"t": "c"}), false),
        (json!({"t": {"$in": [1, 2]}}), json!({"t": "1"}), false),
        (json!({"t": {"$in": ["a"]}}), json!({}), false),
        (json!({"t": {"$nin": ["a", "b"]}}), json!({"t": "c"}), true),
        (json!({"t": {"$nin": ["a", "b"]}}), json!({"t": "a"}), false),
        (json!({"t": {"$nin": ["a"]}}), json!({}), true),
    ]);
}

#[test]
fn exist_tells_present_from_missing_and_null_is_present() {
    table(&[
        (json!({"t": {"$exist": true}}), json!({"t": 0}), true),
        (json!({"t": {"$exist": true}}), json!({"t": null}), true),
        (json!({"t": {"$exist": true}}), json!({}), false),
        (json!({"t": {"$exist": false}}), json!({}), true),
        (json!({"t": {"$exist": false}}), json!({"t": null}), false),
        (json!({"a": {"b": {"$exist": false}}}), json!({}), true),
        (
            json!({"a": {"b": {"$exist": false}}}),
            json!({"a": "text"}),
            true,
        ),
    ]);
}

#[test]
fn comparisons_hold_between_two_numbers_or_two_strings_only() {
    table(&[
        (json!({"n": {"$gt": 10}}), json!({"n": 11}), true),
        (json!({"n": {"$gt": 10}}), json!({"n": 10}), false),
        (json!({"n": {"$gte": 10}}), json!({"n": 10}), true),
        (json!({"n": {"$gte": 10}}), json!({"n": 9.5}), false),
        (json!({"n": {"$lt": 10}}), json!({"n": -3}), true),
        (json!({"n": {"$lt": 10}}), json!({"n": 10}), false),
        (json!({"n": {"$lte": 10}}), json!({"n": 10.0}), true),
        (json!({"n": {"$lte": 1.5}}), json!({"n": 2}), false),
        (
            json!({"n": {"$gt": 9007199254740992_u64}}),
            json!({"n": 9007199254740993_u64}),
            true,
        ),
        (json!({"n": {"$gt": -1}}), json!({"n": u64::MAX}), true),
        (json!({"n": {"$gt": 10}}), json!({"n": "11"}), false),
        (json!({"n": {"$lt": "11"}}), json!({"n": 10}), false),
        (json!({"n": {"$gt": 10}}), json!({"n": null}), false),
        (json!({"n": {"$gt": 10}}), json!({}), false),
        (json!({"s": {"$gt": "b"}}), json!({"s": "c"}), true),
        (json!({"s": {"$lt": "b"}}), json!({"s": "B"}), true),
        (
            json!({"s": {"$gte": "2026-01-01"}}),
            json!({"s": "2026-12-04T10:00:00Z"}),
            true,
        ),
        (
            json!({"n": {"$gte": 10, "$lt": 20}}),
            json!({"n": 15}),
            true,
        ),
        (
            json!({"n": {"$gte": 10, "$lt": 20}}),
            json!({"n": 20}),
            false,
        ),
    ]);
}

#[test]
fn starts_with_and_ends_with_read_strings_only() {
    table(&[
        (
            json!({"t": {"$startsWith": "order."}}),
            json!({"t": "order.paid"}),
            true,
        ),
        (
            json!({"t": {"$startsWith": "order."}}),
            json!({"t": "refund.order."}),
            false,
        ),
        (
            json!({"t": {"$endsWith": ".paid"}}),
            json!({"t": "order.paid"}),
            true,
        ),
        (
            json!({"t": {"$endsWith": ".paid"}}),
            json!({"t": "order.paid.x"}),
            false,
        ),
        (json!({"t": {"$startsWith": "1"}}), json!({"t": 10}), false),
        (json!({"t": {"$endsWith": ""}}), json!({}), false),
    ]);
}

#[test]
fn or_and_and_not_combine_at_any_depth() {
    let either = json!({"$or": [{"type": "a"}, {"total": {"$gt": 100}}]});
    let both = json!({"$and": [{"type": "a"}, {"total": {"$gt": 100}}]});
    table(&[
        (either.clone(), json!({"type": "a", "total": 1}), true),
        (either.clone(), json!({"type": "b", "total": 101}), true),
        (either, json!({"type": "b", "total": 1}), false),
        (both.clone(), json!({"type": "a", "total": 101}), true),
        (both, json!({"type": "a", "total": 1}), false),
        (json!({"$not": {"type": "a"}}), json!({"type": "b"}), true),
        (json!({"$not": {"type": "a"}}), json!({"type": "a"}), false),
        (json!({"$not": {"type": "a"}}), json!({}), true),
        (
            json!({"n": {"$or": [{"$lt": 0}, {"$gt": 10}]}}),
            json!({"n": 11}),
            true,
        ),
        (
            json!({"n": {"$or": [{"$lt": 0}, {"$gt": 10}]}}),
            json!({"n": 5}),
            false,
        ),
        (
            json!({"n": {"$and": [{"$gt": 0}, {"$neq": 3}]}}),
            json!({"n": 3}),
            false,
        ),
        (
            json!({"n": {"$not": {"$in": [1, 2]}}}),
            json!({"n": 3}),
            true,
        ),
        (json!({"n": {"$not": 3}}), json!({"n": 3}), false),
        (
            json!({"data": {"$or": [{"kind": "x"}, {"$and": [{"kind": "y"}, {"$not": {"v": {"$lt": 2}}}]}]}}),
            json!({"data": {"kind": "y", "v": 2}}),
            true,
        ),
        (
            json!({"data": {"$or": [{"kind": "x"}, {"$and": [{"kind": "y"}, {"$not": {"v": {"$lt": 2}}}]}]}}),
            json!({"data": {"kind": "y", "v": 1}}),
            false,
        ),
        (
            json!({"type": "a", "$or": [{"x": 1}, {"y": 1}]}),
            json!({"type": "a", "y": 1}),
            true,
        ),
    ]);
}

#[test]
fn a_nested_object_matches_nested_fields() {
    let p = json!({"data": {"object": {"status": "paid", "amount": {"$gte": 100}}}});
    table(&[
        (
            p.clone(),
            json!({"data": {"object": {"status": "paid", "amount": 150, "x": 1}}}),
            true,
        ),
        (
            p.clone(),
            json!({"data": {"object": {"status": "paid", "amount": 50}}}),
            false,
        ),
        (p.clone(), json!({"data": {"object": "paid"}}), false),
        (p.clone(), json!({"data": null}), false),
        (p, json!({}), false),
    ]);
}

#[test]
fn a_scalar_matches_an_array_holding_it_and_fields_are_looked_up_in_each_element() {
    table(&[
        (
            json!({"tags": "vip"}),
            json!({"tags": ["new", "vip"]}),
            true,
        ),
        (json!({"tags": "vip"}), json!({"tags": ["new"]}), false),
        (json!({"tags": "vip"}), json!({"tags": []}), false),
        (
            json!({"tags": ["a", "b"]}),
            json!({"tags": ["a", "b"]}),
            true,
        ),
        (
            json!({"tags": ["a", "b"]}),
            json!({"tags": ["b", "a"]}),
            false,
        ),
        (
            json!({"tags": {"$in": ["x", "vip"]}}),
            json!({"tags": ["new", "vip"]}),
            true,
        ),
        (
            json!({"tags": {"$nin": ["vip"]}}),
            json!({"tags": ["new", "vip"]}),
            false,
        ),
        (
            json!({"tags": {"$neq": "vip"}}),
            json!({"tags": ["new", "vip"]}),
            false,
        ),
        (json!({"n": {"$gt": 10}}), json!({"n": [1, 20]}), true),
        (json!({"n": {"$gt": 10}}), json!({"n": [1, 2]}), false),
        (
            json!({"t": {"$startsWith": "v"}}),
            json!({"t": ["a", "vip"]}),
            true,
        ),
        (
            json!({"items": {"sku": "A-1"}}),
            json!({"items": [{"sku": "B"}, {"sku": "A-1"}]}),
            true,
        ),
        (
            json!({"items": {"sku": "A-1"}}),
            json!({"items": [{"sku": "B"}]}),
            false,
        ),
        (
            json!({"type": "a"}),
            json!([{"type": "b"}, {"type": "a"}]),
            true,
        ),
    ]);
}

#[test]
fn header_names_match_whatever_their_case_and_values_are_strings() {
    let headers = [
        ("X-Event-Type".to_string(), "order.created".to_string()),
        ("x-tag".to_string(), "a".to_string()),
        ("X-Tag".to_string(), "b".to_string()),
        ("X-Count".to_string(), "3".to_string()),
    ];
    let h = headers_value(&headers);
    let table = [
        (json!({"x-event-type": "order.created"}), true),
        (json!({"X-EVENT-TYPE": "order.created"}), true),
        (json!({"X-Event-Type": {"$startsWith": "order."}}), true),
        (json!({"x-event-type": "Order.Created"}), false),
        (json!({"x-tag": "b"}), true),
        (json!({"x-count": 3}), false),
        (json!({"x-count": "3"}), true),
        (json!({"$or": [{"X-Missing": "1"}, {"X-TAG": "a"}]}), true),
        (json!({"x-missing": {"$exist": false}}), true),
    ];
    for (pattern, want) in table {
        let f = filter(json!({ "headers": pattern }));
        assert_eq!(f.matches(&h, None), want, "{pattern}");
    }
}

#[test]
fn both_parts_must_match_and_a_body_that_does_not_parse_matches_no_body_pattern() {
    let f = filter(json!({"body": {"type": "a"}, "headers": {"x-env": "prod"}}));
    let prod = headers_value(&[("X-Env".into(), "prod".into())]);
    let test = headers_value(&[("X-Env".into(), "test".into())]);
    let a = json!({"type": "a"});
    assert!(f.matches(&prod, Some(&a)));
    assert!(!f.matches(&test, Some(&a)));
    assert!(!f.matches(&prod, Some(&json!({"type": "b"}))));
    assert!(!f.matches(&prod, None));
    let headers_only = filter(json!({"headers": {"x-env": "prod"}}));
    assert!(headers_only.matches(&prod, None), "the body is not read");
    assert_eq!(body_value(b"not json", Some("application/json")), None);
    assert_eq!(
        body_value(b"{\"a\":1}", Some("text/plain")),
        Some(json!({"a": 1}))
    );
}

#[test]
fn a_form_body_is_the_object_of_its_fields_all_strings() {
    let ct = Some("application/x-www-form-urlencoded; charset=utf-8");
    let body = body_value(
        b"command=%2Fdeploy&text=prod+now&channel=a&channel=b&n=5&payload=%7B%22a%22%3A1%7D",
        ct,
    )
    .expect("a form");
    let table = [
        (json!({"command": "/deploy"}), true),
        (json!({"text": {"$startsWith": "prod"}}), true),
        (json!({"channel": "b"}), true),
        (json!({"channel": ["a", "b"]}), true),
        (json!({"n": 5}), false),
        (json!({"n": "5"}), true),
        (json!({"payload": "{\"a\":1}"}), true),
        (json!({"payload": {"a": 1}}), false),
    ];
    for (pattern, want) in table {
        assert_eq!(body_matches(&pattern, &body), want, "{pattern}");
    }
    assert_eq!(
        body_value(b"a=%zz", ct),
        None,
        "a bad form matches no body pattern"
    );
}

fn refused(table: &[(Value, &str, &str)]) {
    for (raw, path, fragment) in table {
        let err = parse_filter(raw).unwrap_err();
        assert_eq!(err.path, *path, "{raw}: {err:?}");
        assert!(err.problem.contains(fragment), "{raw}: {err:?}");
    }
}

#[test]
fn parse_refuses_a_bad_shape_naming_the_path() {
    refused(&[
        (json!("type=a"), "", "must be an object"),
        (json!({}), "", "is empty"),
        (json!({"query": {}}), ".query", "unknown field"),
        (json!({"body": "a"}), ".body", "must be a pattern"),
        (json!({"body": {}}), ".body", "empty pattern"),
        (json!({"body": {"t": {}}}), ".body.t", "empty pattern"),
        (
            json!({"body": {"t": {"$eq": 1, "a": 2}}}),
            ".body.t",
            "mixes operators",
        ),
        (
            json!({"body": {"$eq": 1}}),
            ".body.$eq",
            "applies to a field",
        ),
        (json!({"body": {"$or": []}}), ".body.$or", "non-empty list"),
        (
            json!({"body": {"$or": {"a": 1}}}),
            ".body.$or",
            "non-empty list",
        ),
        (
            json!({"body": {"$or": [{"a": 1}, "b"]}}),
            ".body.$or[1]",
            "must be a pattern",
        ),
        (
            json!({"body": {"$not": 1}}),
            ".body.$not",
            "must be a pattern",
        ),
    ]);
}

#[test]
fn parse_refuses_an_unknown_operator_or_a_bad_operand_naming_the_path() {
    refused(&[
        (
            json!({"body": {"total": {"$gte": "1", "$regex": "x"}}}),
            ".body.total.$regex",
            "unknown operator",
        ),
        (
            json!({"body": {"$where": "1"}}),
            ".body.$where",
            "unknown operator",
        ),
        (
            json!({"body": {"n": {"$or": [{"$bad": 1}]}}}),
            ".body.n.$or[0].$bad",
            "unknown operator",
        ),
        (
            json!({"headers": {"X-A": {"$Eq": "1"}}}),
            ".headers.X-A.$Eq",
            "unknown operator",
        ),
        (
            json!({"body": {"total": {"$gte": true}}}),
            ".body.total.$gte",
            "a number or a string",
        ),
        (
            json!({"body": {"total": {"$gt": [1]}}}),
            ".body.total.$gt",
            "a number or a string",
        ),
        (
            json!({"body": {"$and": [{"a": {"$lt": null}}]}}),
            ".body.$and[0].a.$lt",
            "a number or a string",
        ),
        (
            json!({"body": {"n": {"$not": {"$gte": {}}}}}),
            ".body.n.$not.$gte",
            "a number or a string",
        ),
        (
            json!({"body": {"t": {"$startsWith": 1}}}),
            ".body.t.$startsWith",
            "a string",
        ),
        (
            json!({"body": {"t": {"$in": "a"}}}),
            ".body.t.$in",
            "non-empty list",
        ),
        (
            json!({"body": {"t": {"$nin": []}}}),
            ".body.t.$nin",
            "non-empty list",
        ),
    ]);
}

#[test]
fn exist_takes_a_boolean_only() {
    refused(&[(
        json!({"body": {"t": {"$exist": 1}}}),
        ".body.t.$exist",
        "true or false",
    )]);
}

#[test]
fn nesting_deeper_than_the_limit_is_refused_and_the_limit_itself_is_accepted() {
    let nest = |levels: usize| {
        let mut p = json!({"leaf": 1});
        for _ in 1..levels {
            p = json!({"a": p});
        }
        json!({"body": p})
    };
    assert!(parse_filter(&nest(MAX_DEPTH)).is_ok());
    let err = parse_filter(&nest(MAX_DEPTH + 1)).unwrap_err();
    assert!(err.problem.contains("deeper"), "{err:?}");
    assert!(err.path.starts_with(".body.a.a."), "{err:?}");
}

#[test]
fn the_readme_filter_leaves_out_the_smoke_event() {
    // README, "Deploying", step 7: `npm run smoke` sends X-Hookrelay-Smoke: 1.
    let f = filter(json!({"headers": {"x-hookrelay-smoke": {"$exist": false}}}));
    let smoke = headers_value(&[("X-Hookrelay-Smoke".into(), "1".into())]);
    let provider = headers_value(&[("X-Signature".into(), "ab".into())]);
    assert!(!f.matches(&smoke, None), "the smoke event is filtered out");
    assert!(
        f.matches(&provider, None),
        "a provider's event goes through"
    );
}
