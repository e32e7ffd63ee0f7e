//! An event's story (`GET /events/:event_id`) as one timeline, oldest
//! first: its arrival and ingest, the routes it did not match, every
//! attempt, each delivery step (calls, parks, drains), each delivery's
//! outcome, its dead letters and every decision about them. Pure: the
//! story and the time to measure ages from are passed in.

use crate::show::{age, cell};
use serde_json::Value;

/// One line of the timeline: when, and what.
type Line = (i64, String);

/// The story as lines, oldest first (ties keep the story's order).
pub fn timeline(story: &Value, now: i64) -> Vec<String> {
    let mut lines: Vec<Line> = Vec::new();
    event_lines(&story["event"], &story["routes_unmatched"], &mut lines);
    lines.extend(items(&story["attempts"]).map(attempt_line));
    lines.extend(items(&story["steps"]).map(step_line));
    for d in items(&story["deliveries"]) {
        delivery_lines(d, &mut lines);
    }
    lines.extend(items(&story["dead_letters"]).map(|e| {
        let text = format!(
            "dead-lettered as {} ({}, now {})",
            cell(&e["id"]),
            cell(&e["error_code"]),
            cell(&e["status"])
        );
        (int(e, "created_at"), text)
    }));
    lines.extend(items(&story["decisions"]).map(decision_line));
    lines.sort_by_key(|(at, _)| *at);
    let mut out: Vec<String> = lines
        .into_iter()
        .map(|(at, text)| format!("{}  {text}", age(at, now)))
        .collect();
    if story["event"].is_null() {
        let key = cell(&story["event_archive_key"]);
        out.insert(0, format!("the event's row was swept to the archive: {key} (its entries and decisions follow)"));
    }
    out
}

fn attempt_line(a: &Value) -> Line {
    let to = a["destination"]
        .as_str()
        .map_or(String::new(), |d| format!(" to {d}"));
    let text = format!(
        "attempt #{}{to} failed: {} {}",
        cell(&a["attempt"]),
        cell(&a["code"]),
        cell(&a["message"])
    );
    (int(a, "at"), text)
}

fn step_line(s: &Value) -> Line {
    let code = s["code"]
        .as_str()
        .map_or(String::new(), |c| format!(" {c}"));
    let detail = s["detail"]
        .as_str()
        .map_or(String::new(), |d| format!(": {d}"));
    let text = format!(
        "{} ({}){code}{detail}",
        cell(&s["step"]),
        cell(&s["component"])
    );
    (int(s, "at"), text)
}

fn decision_line(d: &Value) -> Line {
    let error = d["error_code"]
        .as_str()
        .map_or(String::new(), |c| format!(" {c}"));
    let text = format!(
        "{} of {} by {}: {}{error} ({:?})",
        cell(&d["action"]),
        cell(&d["entry_id"]),
        cell(&d["actor"]),
        cell(&d["outcome"]),
        cell(&d["reason"])
    );
    (int(d, "at"), text)
}

fn items(v: &Value) -> impl Iterator<Item = &Value> {
    v.as_array().into_iter().flatten()
}

fn int(v: &Value, key: &str) -> i64 {
    v[key].as_i64().unwrap_or(0)
}

fn event_lines(e: &Value, unmatched: &Value, lines: &mut Vec<Line>) {
    if e.is_null() {
        return;
    }
    lines.push((
        int(e, "received_at"),
        format!(
            "received from {} (delivery id {})",
            cell(&e["source"]),
            cell(&e["delivery_id"])
        ),
    ));
    let dupes = int(e, "duplicate_count");
    let dupes = if dupes > 0 {
        format!("; {dupes} duplicate deliveries seen since")
    } else {
        String::new()
    };
    lines.push((
        int(e, "ingested_at"),
        format!(
            "ingested as {}, key {}{dupes}",
            cell(&e["event_id"]),
            cell(&e["idempotency_key"])
        ),
    ));
    if unmatched.as_array().is_some_and(|u| !u.is_empty()) {
        lines.push((
            int(e, "ingested_at"),
            format!("routes not matched: {}", cell(unmatched)),
        ));
    }
}

fn delivery_lines(d: &Value, lines: &mut Vec<Line>) {
    let to = cell(&d["destination"]);
    if let Some(at) = d["parked_at"].as_i64() {
        lines.push((
            at,
            format!("parked for {to} (cause {})", cell(&d["park_cause"])),
        ));
    }
    if let Some(at) = d["delivered_at"].as_i64() {
        lines.push((
            at,
            format!("delivered to {to} after {} attempts", cell(&d["attempts"])),
        ));
    } else {
        let error = d["last_error"]
            .as_str()
            .map_or(String::new(), |e| format!(", last error {e}"));
        lines.push((
            int(d, "updated_at"),
            format!(
                "delivery to {to}: {} after {} attempts{error}",
                cell(&d["state"]),
                cell(&d["attempts"])
            ),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_story_reads_oldest_first_with_every_part() {
        let story = json!({
            "event": {"event_id": "evt_1", "idempotency_key": "demo:1", "source": "demo", "delivery_id": "1", "received_at": 1000, "ingested_at": 2000, "duplicate_count": 1},
            "routes_unmatched": ["audit"],
            "attempts": [{"attempt": 1, "code": "UPSTREAM_5XX", "message": "503", "at": 3000, "destination": "billing"}],
            "steps": [{"at": 3500, "step": "parked", "component": "billing", "code": "CIRCUIT_OPEN", "detail": null}],
            "deliveries": [{"destination": "billing", "state": "dead_lettered", "attempts": 6, "delivered_at": null, "last_error": "UPSTREAM_5XX", "parked_at": null, "updated_at": 4000}],
            "dead_letters": [{"id": "dlq_1", "error_code": "UPSTREAM_5XX", "status": "replayed", "created_at": 5000}],
            "decisions": [{"action": "replay", "entry_id": "dlq_1", "actor": "ann", "outcome": "succeeded", "reason": "fixed", "error_code": null, "at": 6000}]
        });
        let lines = timeline(&story, 10_000);
        let texts: Vec<&str> = lines
            .iter()
            .map(|l| l.split_once("Z)  ").unwrap().1)
            .collect();
        assert_eq!(
            texts,
            [
                "received from demo (delivery id 1)",
                "ingested as evt_1, key demo:1; 1 duplicate deliveries seen since",
                "routes not matched: audit",
                "attempt #1 to billing failed: UPSTREAM_5XX 503",
                "parked (billing) CIRCUIT_OPEN",
                "delivery to billing: dead_lettered after 6 attempts, last error UPSTREAM_5XX",
                "dead-lettered as dlq_1 (UPSTREAM_5XX, now replayed)",
                "replay of dlq_1 by ann: succeeded (\"fixed\")",
            ]
        );
        assert!(
            lines[0].starts_with("9s ago (1970-01-01T00:00:01Z)"),
            "{}",
            lines[0]
        );
    }

    #[test]
    fn a_swept_event_says_where_its_row_is() {
        let story = json!({"event": null, "event_archive_key": "events/2026-01-01/a~b~1.ndjson", "dead_letters": [], "decisions": []});
        assert!(timeline(&story, 0)[0].contains("events/2026-01-01/a~b~1.ndjson"));
    }
}
