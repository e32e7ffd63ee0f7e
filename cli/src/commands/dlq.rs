//! `hookrelay dlq …`: dead letters (`list`, newest first, by the listing's
//! filters and `--since`/`--until`), one envelope (`show`), the incidents
//! (`groups`), and one decision about one entry (`replay`, `archive`,
//! `unarchive`, `discard`, `restore`, each with its `--reason`).

use super::{connect, id_segment, list, pairs};
use crate::args::{Decision, DlqCommand, EntryFilter, Global};
use crate::clock::now_ms;
use crate::failure::{Done, Failure, Outcome};
use crate::show::{self, age_of, cell, table};
use crate::time_input::parse_optional;
use serde_json::{json, Value};

pub fn run(g: &Global, c: DlqCommand) -> Outcome {
    match c {
        DlqCommand::List { filter, paging } => {
            let query = filter_query(&filter, now_ms())?;
            let relay = connect(g)?;
            list(&relay, g, "webhook-dlq", query, &paging, |items| {
                entries(items, now_ms())
            })
        }
        DlqCommand::Show { id } => show_entry(g, &id),
        DlqCommand::Groups {
            status,
            source,
            destination,
            since,
            until,
        } => {
            let now = now_ms();
            let query = pairs(&[
                ("status", status),
                ("source", source),
                ("destination", destination),
                ("since", time(&since, "--since", now)?),
                ("until", time(&until, "--until", now)?),
            ]);
            let relay = connect(g)?;
            let data = relay.get("webhook-dlq/groups", &query)?;
            if g.json {
                show::print_json(&data);
            } else {
                println!("{}", groups(&data["items"], now));
            }
            Ok(Done::Ok)
        }
        DlqCommand::Replay(d) => decide(g, &d, "replay"),
        DlqCommand::Archive(d) => decide(g, &d, "archive"),
        DlqCommand::Unarchive(d) => decide(g, &d, "unarchive"),
        DlqCommand::Discard(d) => decide(g, &d, "discard"),
        DlqCommand::Restore(d) => decide(g, &d, "restore"),
    }
}

/// A time flag as the unix milliseconds the API takes.
fn time(raw: &Option<String>, flag: &str, now: i64) -> Result<Option<String>, Failure> {
    Ok(parse_optional(raw.as_deref(), flag, now)?.map(|t| t.to_string()))
}

/// The dead-letter filters as query pairs.
pub fn filter_query(f: &EntryFilter, now: i64) -> Result<Vec<(&'static str, String)>, Failure> {
    Ok(pairs(&[
        ("status", f.status.clone()),
        ("source", f.source.clone()),
        ("destination", f.destination.clone()),
        ("code", f.code.clone()),
        ("class", f.class.clone()),
        ("signature", f.signature.clone()),
        ("since", time(&f.since, "--since", now)?),
        ("until", time(&f.until, "--until", now)?),
    ]))
}

/// Entries (or tombstones) as a table.
fn entries(items: &[Value], now: i64) -> String {
    let rows = items
        .iter()
        .map(|e| {
            let at = if e["created_at"].is_null() {
                &e["evicted_at"]
            } else {
                &e["created_at"]
            };
            vec![
                cell(&e["id"]),
                cell(&e["status"]),
                age_of(at, now),
                cell(&e["source"]),
                cell(&e["destination"]),
                cell(&e["error_code"]),
                cell(&e["attempts"]),
                cell(&e["actions"]),
            ]
        })
        .collect();
    table(
        &[
            "ID",
            "STATUS",
            "DEAD-LETTERED",
            "SOURCE",
            "DESTINATION",
            "CODE",
            "ATTEMPTS",
            "ACTIONS",
        ],
        rows,
    )
}

/// The incidents as a table, each with its sample's message under it.
fn groups(items: &Value, now: i64) -> String {
    let list = items.as_array().cloned().unwrap_or_default();
    if list.is_empty() {
        return "(no incidents: nothing matches)".into();
    }
    let rows = list
        .iter()
        .map(|g| {
            vec![
                cell(&g["signature"]),
                cell(&g["count"]),
                cell(&g["code"]),
                cell(&g["sources"]),
                cell(&g["destinations"]),
                age_of(&g["first_seen_at"], now),
                age_of(&g["last_seen_at"], now),
            ]
        })
        .collect();
    let mut out = table(
        &[
            "SIGNATURE",
            "COUNT",
            "CODE",
            "SOURCES",
            "DESTINATIONS",
            "FIRST",
            "LAST",
        ],
        rows,
    );
    for g in &list {
        out.push_str(&format!(
            "\n{}: {} (e.g. {})",
            cell(&g["signature"]),
            cell(&g["message"]),
            cell(&g["sample_id"])
        ));
    }
    out
}

fn show_entry(g: &Global, id: &str) -> Outcome {
    let path = format!("webhook-dlq/{}", id_segment(id, "an entry id (dlq_…)")?);
    let relay = connect(g)?;
    let data = relay.get(&path, &[])?;
    if g.json {
        show::print_json(&data);
    } else {
        println!("{}", envelope(&data, now_ms()));
    }
    Ok(Done::Ok)
}

/// One entry: its identity, failure, history and the actions it allows.
fn envelope(e: &Value, now: i64) -> String {
    let env = &e["envelope"];
    let mut lines = vec![
        format!("entry        {} ({})", cell(&e["id"]), cell(&e["status"])),
        format!(
            "event        {}  key {}",
            cell(&e["event_id"]),
            cell(&e["idempotency_key"])
        ),
        format!(
            "source       {}  destination {}",
            cell(&e["source"]),
            cell(&e["destination"])
        ),
        format!("dead-letter  {}", age_of(&e["created_at"], now)),
        format!(
            "failure      {} ({}): {}",
            cell(&e["error_code"]),
            cell(&e["error_class"]),
            cell(&env["failure"]["message"])
        ),
        format!("signature    {}", cell(&e["error_signature"])),
        format!("replays      {} failed so far", cell(&e["replay_attempts"])),
        format!("actions      {}", cell(&e["actions"])),
    ];
    let history = env["delivery"]["history"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if !history.is_empty() {
        lines.push("attempts".into());
        for a in history {
            lines.push(format!(
                "  #{} {}  {}: {}",
                cell(&a["attempt"]),
                age_of(&a["at_ms"], now),
                cell(&a["code"]),
                cell(&a["message"])
            ));
        }
    }
    if let Some(excerpt) = env["input"]["excerpt"].as_str().filter(|x| !x.is_empty()) {
        lines.push(format!(
            "excerpt      {}",
            excerpt.chars().take(300).collect::<String>()
        ));
    }
    lines.join("\n")
}

/// One decision: `POST /webhook-dlq/:id/<action>` with the reason.
fn decide(g: &Global, d: &Decision, action: &str) -> Outcome {
    let path = format!(
        "webhook-dlq/{}/{action}",
        id_segment(&d.id, "an entry id (dlq_…)")?
    );
    let relay = connect(g)?;
    let answer = relay.post(&path, &json!({"reason": d.reason}))?;
    let data = answer.data;
    if g.json {
        show::print_json(&data);
    }
    let failed =
        action == "replay" && !matches!(data["outcome"].as_str(), Some("succeeded" | "deduped"));
    if !g.json {
        println!("{}", decided(&data, action));
    }
    if failed {
        return Err(Failure::failed(
            format!(
                "the replay of {} failed: {}",
                d.id,
                cell(&data["error"]["message"])
            ),
            "fix the destination, then replay again; `hookrelay dlq show` shows its history",
        ));
    }
    Ok(Done::Ok)
}

fn decided(data: &Value, action: &str) -> String {
    if action == "replay" {
        return format!(
            "{}: replay {} ({}), status now {}",
            cell(&data["id"]),
            cell(&data["outcome"]),
            replay_delivery(&data["delivery"]),
            cell(&data["status"])
        );
    }
    format!(
        "{}: {} -> {} ({action})",
        cell(&data["id"]),
        cell(&data["previous_status"]),
        cell(&data["status"])
    )
}

/// What a replay's `delivery` (DESIGN §4's `DownstreamResult`) means, in
/// words an operator reads without the API's reference.
fn replay_delivery(delivery: &Value) -> String {
    match delivery.as_str() {
        Some("delivered") => "delivered now".into(),
        Some("already_delivered") => "delivered before: no call made".into(),
        Some("not_forwarded") => {
            "no call made: ingested again, or pullable again at a pull destination".into()
        }
        Some("failed") => "the destination did not take it".into(),
        Some("parked") => "parked behind its destination's open breaker".into(),
        Some("in_flight_elsewhere") => "another worker is delivering it".into(),
        _ => format!("{} delivery", cell(delivery)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replays_delivery_is_said_in_words() {
        use serde_json::json;
        let table = [
            (json!("delivered"), "delivered now"),
            (json!("already_delivered"), "delivered before: no call made"),
            (
                json!("not_forwarded"),
                "no call made: ingested again, or pullable again at a pull destination",
            ),
            (json!("something_new"), "something_new delivery"),
        ];
        for (delivery, want) in table {
            assert_eq!(replay_delivery(&delivery), want);
        }
        let data = json!({"id": "dlq_1", "outcome": "succeeded", "delivery": "not_forwarded", "status": "replayed"});
        assert_eq!(
            decided(&data, "replay"),
            "dlq_1: replay succeeded (no call made: ingested again, or pullable again at a pull destination), status now replayed"
        );
    }

    #[test]
    fn filters_become_query_pairs_with_times_in_unix_ms() {
        let f = EntryFilter {
            status: Some("pending".into()),
            since: Some("1h".into()),
            ..Default::default()
        };
        let q = filter_query(&f, 7_200_000).unwrap();
        assert_eq!(
            q,
            vec![("status", "pending".into()), ("since", "3600000".into())]
        );
        let bad = EntryFilter {
            until: Some("soon".into()),
            ..Default::default()
        };
        assert_eq!(filter_query(&bad, 0).unwrap_err().exit_code(), 2);
    }

    #[test]
    fn a_decision_reads_as_one_line() {
        let archived = json!({"id": "dlq_1", "status": "archived", "previous_status": "pending", "action": "archive"});
        assert_eq!(
            decided(&archived, "archive"),
            "dlq_1: pending -> archived (archive)"
        );
        let replayed = json!({"id": "dlq_2", "outcome": "succeeded", "status": "replayed", "delivery": "delivered"});
        assert!(decided(&replayed, "replay").contains("replay succeeded"));
        let t = groups(
            &json!([{"signature": "sig_1", "count": 2, "code": "UPSTREAM_5XX", "sources": ["a"], "destinations": [], "message": "boom", "sample_id": "dlq_9"}]),
            0,
        );
        assert!(t.contains("sig_1: boom (e.g. dlq_9)"), "{t}");
    }
}
