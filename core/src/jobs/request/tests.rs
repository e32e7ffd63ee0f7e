//! A job request's parsing: defaults, ranges, and the refusal of unknown fields with their path.

use super::*;
use serde_json::json;

fn field_of(body: Value) -> String {
    parse_job_request(&body).expect_err("refused").field
}

#[test]
fn the_defaults_follow_the_contract() {
    let r = parse_job_request(&json!({"action": "replay", "reason": "fixed the schema"})).unwrap();
    assert_eq!(r.action, JobAction::Replay);
    assert!(!r.dry_run);
    assert_eq!(
        r.canary,
        CanarySpec {
            size: 5,
            per_signature: true
        }
    );
    assert_eq!(r.approve, Approval::Manual);
    assert_eq!(r.rate_per_s, 10.0);
    assert_eq!(r.concurrency, 5);
    assert_eq!(
        r.abort,
        AbortSpec {
            max_failure_ratio: 0.2,
            min_attempts: 10
        }
    );
    assert_eq!(r.filter.entries.status, Some(EntryStatus::Pending));
    let archive =
        parse_job_request(&json!({"action": "archive", "reason": "known bad sender"})).unwrap();
    assert_eq!(archive.canary.size, 0, "only replay jobs have a canary");
}

#[test]
fn an_unknown_field_is_refused_at_every_depth() {
    let base = || json!({"action": "replay", "reason": "fixed the schema"});
    let table = [
        ("fitler", json!({"source": "x"}), "fitler"),
        ("filter", json!({"sourse": "x"}), "filter.sourse"),
        ("canary", json!({"sise": 3}), "canary.sise"),
        ("abort", json!({"max_failure": 0.5}), "abort.max_failure"),
    ];
    for (key, value, want) in table {
        let mut body = base();
        body[key] = value;
        assert_eq!(field_of(body), want);
    }
}

#[test]
fn every_field_is_range_checked_and_named() {
    let with = |k: &str, v: Value| {
        let mut b = json!({"action": "replay", "reason": "fixed the schema"});
        b[k] = v;
        b
    };
    let table = [
        (json!({"reason": "fixed the schema"}), "action"),
        (
            json!({"action": "purge", "reason": "fixed the schema"}),
            "action",
        ),
        (json!({"action": "replay", "reason": "no"}), "reason"),
        (with("rate_per_s", json!(0.05)), "rate_per_s"),
        (with("rate_per_s", json!(101)), "rate_per_s"),
        (with("rate_per_s", json!("fast")), "rate_per_s"),
        (with("approve", json!("yes")), "approve"),
        // Refused, not clamped: a job runs exactly as asked.
        (with("concurrency", json!(0)), "concurrency"),
        (with("concurrency", json!(51)), "concurrency"),
        (with("concurrency", json!(2.5)), "concurrency"),
        (with("concurrency", json!("5")), "concurrency"),
        (with("dry_run", json!("true")), "dry_run"),
        (with("canary", json!({"size": 51})), "canary.size"),
        (
            with("canary", json!({"per_signature": 1})),
            "canary.per_signature",
        ),
        (with("canary", json!(3)), "canary"),
        (
            with("abort", json!({"max_failure_ratio": 1.5})),
            "abort.max_failure_ratio",
        ),
        (
            with("abort", json!({"min_attempts": 0})),
            "abort.min_attempts",
        ),
        (
            with("filter", json!({"status": "replayed"})),
            "filter.status",
        ),
        (
            with("filter", json!({"since": "yesterday"})),
            "filter.since",
        ),
        (with("filter", json!([])), "filter"),
        (
            json!({"action": "archive", "reason": "fixed the schema", "canary": {"size": 2}}),
            "canary",
        ),
        (
            json!({"action": "archive", "reason": "fixed the schema", "filter": {"status": "archived"}}),
            "filter.status",
        ),
        (json!([1]), ""),
    ];
    for (body, want) in table {
        assert_eq!(field_of(body.clone()), want, "{body}");
    }
}

#[test]
fn the_edges_are_accepted() {
    let r = parse_job_request(&json!({
        "action": "replay", "reason": "fixed the schema", "dry_run": true,
        "filter": {"status": "archived", "source": "demo-hmac", "since": 0, "until": "2026-12-01T00:00:00Z"},
        "canary": {"size": 0, "per_signature": false}, "approve": "auto",
        "rate_per_s": 0.1, "concurrency": 50, "abort": {"max_failure_ratio": 0, "min_attempts": 1}
    }))
    .unwrap();
    assert!(r.dry_run);
    assert_eq!(r.filter.since_ms, Some(0));
    assert_eq!(r.filter.until_ms, Some(1_796_083_200_000));
    assert_eq!(r.filter.entries.status, Some(EntryStatus::Archived));
    assert_eq!(r.canary.size, 0);
    assert_eq!(r.approve, Approval::Auto);
    assert_eq!(r.concurrency, 50);
}
