//! The dead-letter listing's filter: each parameter, and the refusals that name it.

use super::super::pairs;
use super::*;
use serde_json::json;

const SIG: &str = "sig_0123456789abcdef";

#[test]
fn every_dead_letter_filter_value_is_accepted() {
    let mut table: Vec<(&str, &str)> = vec![
        ("source", "demo-stripe"),
        ("source", "a"),
        ("source", "under_score-9"),
        ("signature", SIG),
        ("signature", "sig_ffffffffffffffff"),
    ];
    table.extend(DEAD_LETTER_STATUSES.map(|s| ("status", s)));
    table.extend(FAILURE_CLASSES.map(|c| ("class", c)));
    let codes = ErrorCode::ALL.map(ErrorCode::as_str);
    table.extend(codes.iter().map(|c| ("code", *c)));
    let long_source = "s".repeat(64);
    table.push(("source", &long_source));
    for (param, value) in table {
        let f = parse_dead_letter_filter(&pairs(&[(param, value)])).unwrap();
        let got = match param {
            "status" => f.status.map(EntryStatus::as_str),
            "class" => f.class.map(FailureClass::as_str),
            "code" => f.code.map(ErrorCode::as_str),
            "signature" => f.signature.as_deref(),
            _ => f.source.as_deref(),
        };
        assert_eq!(got, Some(value), "{param}={value}");
        let f = dead_letter_filter_from_json(&json!({ param: value })).unwrap();
        assert_eq!(
            f,
            parse_dead_letter_filter(&pairs(&[(param, value)])).unwrap()
        );
    }
}

#[test]
fn the_statuses_are_the_five_lifecycle_names() {
    assert_eq!(
        DEAD_LETTER_STATUSES,
        ["pending", "replayed", "poisoned", "archived", "discarded"]
    );
    for name in DEAD_LETTER_STATUSES {
        assert_eq!(EntryStatus::parse(name).map(EntryStatus::as_str), Ok(name));
    }
    assert_eq!(EntryStatus::ALL.len(), DEAD_LETTER_STATUSES.len());
}

#[test]
fn the_class_names_are_the_failure_class_spellings() {
    for name in FAILURE_CLASSES {
        assert_eq!(
            FailureClass::parse(name).map(FailureClass::as_str),
            Some(name)
        );
    }
}

#[test]
fn a_bad_dead_letter_filter_value_names_the_param_and_the_allowed_values() {
    let long_source = "s".repeat(65);
    let statuses = "pending, replayed, poisoned, archived, discarded";
    let table = [
        ("status", "PENDING", statuses),
        ("status", "done", statuses),
        ("status", " pending", statuses),
        ("status", "archive", statuses),
        ("class", "Transient", "transient, poison, unknown"),
        ("class", "fatal", "transient, poison, unknown"),
        ("code", "upstream_5xx", "UPSTREAM_5XX"),
        ("code", "HTTP_500", "BAD_PAYLOAD, SCHEMA_MISMATCH"),
        ("source", "Demo", "a-z, 0-9"),
        ("source", "demo stripe", "a-z, 0-9"),
        ("source", "démo", "a-z, 0-9"),
        ("source", long_source.as_str(), "1-64"),
        ("signature", "sig_0123456789ABCDEF", "16 lowercase hex"),
        ("signature", "sig_0123456789abcde", "16 lowercase hex"),
        ("signature", "sig_0123456789abcdef0", "16 lowercase hex"),
        ("signature", "sig_0123456789abcdeg", "16 lowercase hex"),
        ("signature", "SIG_0123456789abcdef", "16 lowercase hex"),
        ("signature", "0123456789abcdef", "16 lowercase hex"),
        ("signature", "sig_", "16 lowercase hex"),
        ("signature", "sig_é123456789abcde", "16 lowercase hex"),
    ];
    for (param, value, mentions) in table {
        let err = parse_dead_letter_filter(&pairs(&[(param, value)])).unwrap_err();
        assert_eq!(err.param, param, "{param}={value}");
        assert!(err.message.contains(mentions), "{}", err.message);
        let err = dead_letter_filter_from_json(&json!({ param: value })).unwrap_err();
        assert_eq!(err.param, format!("filter.{param}"));
        assert!(err.message.contains(mentions), "{}", err.message);
    }
}

#[test]
fn the_dead_letter_query_ignores_empty_params_and_leaves_the_page_to_parse_page() {
    let params = pairs(&[
        ("limit", "10"),
        ("cursor", "whatever"),
        ("status", ""),
        ("signature", ""),
        ("code", "TIMEOUT"),
        ("class", ""),
        ("class", "transient"),
    ]);
    let want = DeadLetterFilter {
        class: Some(FailureClass::Transient),
        code: Some(ErrorCode::Timeout),
        ..DeadLetterFilter::default()
    };
    assert_eq!(parse_dead_letter_filter(&params), Ok(want));
    assert_eq!(
        parse_dead_letter_filter(&[]),
        Ok(DeadLetterFilter::default())
    );
}

#[test]
fn an_unknown_dead_letter_param_is_refused_naming_it() {
    let table = [
        vec![("utm", "x")],
        vec![("Status", "nonsense")],
        vec![("stauts", "pending")],
        vec![("code", "TIMEOUT"), ("key", "")],
        vec![("after", "0")],
        vec![("entry_id", "dlq_1")],
    ];
    for params in table {
        let err = parse_dead_letter_filter(&pairs(&params)).unwrap_err();
        let unknown = params.last().unwrap().0;
        assert_eq!(err.param, unknown, "{params:?}");
        assert_eq!(
            err.message,
            "unknown query parameter; this route accepts status, class, code, source, destination, kind, signature, since, until, limit, cursor"
        );
    }
}

#[test]
fn a_dead_letter_param_given_twice_is_refused() {
    for params in [
        [("status", "pending"), ("status", "poisoned")],
        [("source", "a"), ("source", "a")],
        [("signature", SIG), ("signature", SIG)],
    ] {
        let err = parse_dead_letter_filter(&pairs(&params)).unwrap_err();
        assert_eq!(err.param, params[0].0);
        assert!(err.message.contains("more than once"), "{}", err.message);
    }
}

#[test]
fn the_json_filter_takes_nulls_and_empty_strings_as_absent() {
    let table = [
        (json!(null), DeadLetterFilter::default()),
        (json!({}), DeadLetterFilter::default()),
        (
            json!({"status": null, "class": "", "code": "RATE_LIMITED", "source": "demo-github", "signature": null}),
            DeadLetterFilter {
                code: Some(ErrorCode::RateLimited),
                source: Some("demo-github".into()),
                ..DeadLetterFilter::default()
            },
        ),
        (
            json!({"signature": SIG, "status": "pending"}),
            DeadLetterFilter {
                status: Some(EntryStatus::Pending),
                signature: Some(SIG.into()),
                ..DeadLetterFilter::default()
            },
        ),
    ];
    for (v, want) in table {
        assert_eq!(dead_letter_filter_from_json(&v), Ok(want), "{v}");
    }
}

#[test]
fn a_json_filter_of_the_wrong_shape_is_refused() {
    let table = [
        (json!("pending"), "filter"),
        (json!([{"status": "pending"}]), "filter"),
        (json!(["pending"]), "filter"),
        (json!(true), "filter"),
        (json!(7), "filter"),
        (json!({"stauts": "pending"}), "filter.stauts"),
        (json!({"status": "pending", "sourse": "a"}), "filter.sourse"),
        (json!({"limit": 5}), "filter.limit"),
        (json!({"a b": 1}), "filter.\"a b\""),
        (json!({"status": 1}), "filter.status"),
        (json!({"class": ["poison"]}), "filter.class"),
        (json!({"code": {"x": 1}}), "filter.code"),
        (json!({"source": false}), "filter.source"),
        (json!({"signature": 12}), "filter.signature"),
    ];
    for (v, param) in table {
        let err = dead_letter_filter_from_json(&v).unwrap_err();
        assert_eq!(err.param, param, "{v}");
    }
    let err = dead_letter_filter_from_json(&json!({"stauts": "pending"})).unwrap_err();
    assert!(
        err.message.contains(
            "the fields are status, class, code, source, destination, kind and signature"
        ),
        "{}",
        err.message
    );
    let err = dead_letter_filter_from_json(&json!({"status": 1})).unwrap_err();
    assert_eq!(err.message, "must be a string or null");
}

#[test]
fn destination_and_kind_filter_in_both_forms_and_bad_values_are_refused() {
    let want = DeadLetterFilter {
        destination: Some("billing".into()),
        kind: Some(crate::state::EntryKind::Delivery),
        ..DeadLetterFilter::default()
    };
    let q = pairs(&[("destination", "billing"), ("kind", "delivery")]);
    assert_eq!(parse_dead_letter_filter(&q), Ok(want.clone()));
    let j = json!({"destination": "billing", "kind": "delivery"});
    assert_eq!(dead_letter_filter_from_json(&j), Ok(want));
    for (params, param) in [
        (vec![("kind", "delivered")], "kind"),
        (vec![("destination", "Billing!")], "destination"),
        (
            vec![("destination", "a"), ("destination", "b")],
            "destination",
        ),
    ] {
        let err = parse_dead_letter_filter(&pairs(&params)).unwrap_err();
        assert_eq!(err.param, param, "{params:?}");
    }
    let err = dead_letter_filter_from_json(&json!({"kind": "both"})).unwrap_err();
    assert_eq!(err.param, "filter.kind");
    assert!(err.message.contains("ingest, delivery"), "{}", err.message);
}
