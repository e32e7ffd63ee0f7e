//! `hookrelay status`: the relay at a glance, from `GET /healthz`, the
//! stats (`/webhook-dlq/stats`) and the alarms (`/alerts`): depth, oldest
//! pending age, ingress, dominant code, parked deliveries, each destination
//! (breaker, deliveries in the last hour, parked), each pull destination
//! (waiting, due, leased, oldest due), firing alarms. With `--json`, the
//! stats' `data` unchanged.

use super::connect;
use crate::args::Global;
use crate::clock::now_ms;
use crate::failure::{Done, Outcome};
use crate::show::{self, cell, span, table};
use serde_json::Value;

pub fn run(g: &Global) -> Outcome {
    let relay = connect(g)?;
    let stats = relay.get("webhook-dlq/stats", &[])?;
    if g.json {
        show::print_json(&stats);
        return Ok(Done::Ok);
    }
    let now = now_ms();
    let health = relay.public("GET", "/healthz", &[], b"")?;
    let version = serde_json::from_str::<Value>(&health.1)
        .ok()
        .and_then(|h| h["version"].as_str().map(String::from))
        .unwrap_or_else(|| format!("healthz answered {}", health.0));
    let alerts = relay.get("alerts", &[])?;
    println!(
        "relay         {} (version {version}, as of {})",
        relay.base,
        show::instant(now)
    );
    println!("{}", figures(&stats, now));
    println!("\ndestinations");
    println!("{}", destinations(&stats["destinations"], now));
    if let Some(pull) = pull_destinations(&stats["pull"]) {
        println!("\npull destinations");
        println!("{pull}");
    }
    println!("\nalarms firing");
    println!("{}", firing(&alerts["items"], now));
    Ok(Done::Ok)
}

/// The dead-letter figures, a line each; ages as of `now`, with their instant.
fn figures(s: &Value, now: i64) -> String {
    let oldest = s["oldest_pending_age_s"]
        .as_i64()
        .map_or("-".into(), |a| show::age(now - a * 1000, now));
    let parked = &s["parked"];
    let parked_oldest = parked["oldest_age_s"].as_i64().map_or(String::new(), |a| {
        format!(", oldest {} ago", span(a * 1000))
    });
    [
        format!("depth         {} pending dead letters", cell(&s["depth"])),
        format!("oldest        {oldest}"),
        format!(
            "ingress       {} dead letters in the last hour",
            cell(&s["ingress_last_hour"])
        ),
        format!("dominant code {}", cell(&s["dominant_failure_code"])),
        format!(
            "parked        {} deliveries{parked_oldest}",
            cell(&parked["count"])
        ),
    ]
    .join("\n")
}

/// One row per destination: its breaker, last hour, parked deliveries.
fn destinations(list: &Value, now: i64) -> String {
    let rows: Vec<Vec<String>> = list
        .as_array()
        .map(|d| d.iter().map(|d| destination_row(d, now)).collect())
        .unwrap_or_default();
    if rows.is_empty() {
        return "  (none has delivered, parked or failed yet)".into();
    }
    table(
        &["DESTINATION", "BREAKER", "RATE", "LAST HOUR", "PARKED"],
        rows,
    )
}

fn destination_row(d: &Value, now: i64) -> Vec<String> {
    let breaker = match d["breaker"]["state"].as_str() {
        Some(state) => format!(
            "{state} since {}",
            show::age_of(&d["breaker"]["since"], now)
        ),
        None => "CLOSED".into(),
    };
    let hour = &d["deliveries_last_hour"];
    let last_hour = format!(
        "{} delivered, {} dead-lettered of {}",
        cell(&hour["delivered"]),
        cell(&hour["dead_lettered"]),
        cell(&hour["total"])
    );
    let parked = match d["parked"]["oldest_age_s"].as_i64() {
        Some(a) => format!(
            "{} (oldest {} ago)",
            cell(&d["parked"]["count"]),
            span(a * 1000)
        ),
        None => cell(&d["parked"]["count"]),
    };
    // `rate_per_s` is null for a destination without a rate (or none
    // reserved yet): shown as none, never as a zero.
    let rate = match d["rate_per_s"].as_f64() {
        Some(r) => format!("{r}/s"),
        None => "none".into(),
    };
    vec![cell(&d["destination"]), breaker, rate, last_hour, parked]
}

/// One row per pull destination (the stats' `pull`, which the relay
/// answers): waiting, due, leased, the oldest due one's age; the relay's
/// error in their place when it gave none (never zeros); nothing when the
/// relay has no pull destination, or predates them.
fn pull_destinations(pull: &Value) -> Option<String> {
    if let Some(message) = pull["error"]["message"].as_str() {
        return Some(format!("  unknown: {message}"));
    }
    let list = pull["destinations"].as_array().filter(|l| !l.is_empty())?;
    let rows = list
        .iter()
        .map(|d| {
            let oldest = d["oldest_due_age_s"]
                .as_i64()
                .map_or("-".into(), |a| format!("{} ago", span(a * 1000)));
            vec![
                cell(&d["destination"]),
                cell(&d["waiting"]),
                cell(&d["due"]),
                cell(&d["leased"]),
                oldest,
            ]
        })
        .collect();
    Some(table(
        &["DESTINATION", "WAITING", "DUE", "LEASED", "OLDEST DUE"],
        rows,
    ))
}

/// The firing alarms, a line each.
fn firing(items: &Value, now: i64) -> String {
    let lines: Vec<String> = items
        .as_array()
        .into_iter()
        .flatten()
        .filter(|a| a["state"] == "firing")
        .map(|a| {
            format!(
                "  {}  since {}",
                cell(&a["id"]),
                show::age_of(&a["since"], now)
            )
        })
        .collect();
    if lines.is_empty() {
        "  none".into()
    } else {
        lines.join("\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn pull_destinations_read_as_rows_or_the_relays_error() {
        let pull = json!({"destinations": [
            {"destination": "inbox", "waiting": 3, "due": 2, "leased": 1, "oldest_due_age_s": 90},
            {"destination": "outbox", "waiting": 0, "due": 0, "leased": 0, "oldest_due_age_s": null}
        ]});
        let t = pull_destinations(&pull).unwrap();
        assert!(
            t.contains("WAITING") && t.contains("inbox") && t.contains("outbox"),
            "{t}"
        );
        assert!(
            t.lines().any(|l| l.contains("inbox") && l.contains("ago")),
            "{t}"
        );
        let failed =
            json!({"error": {"code": "UNAVAILABLE", "message": "the relay did not answer"}});
        assert_eq!(
            pull_destinations(&failed).as_deref(),
            Some("  unknown: the relay did not answer")
        );
        assert_eq!(pull_destinations(&json!({"destinations": []})), None);
        assert_eq!(pull_destinations(&Value::Null), None);
    }

    #[test]
    fn the_figures_destinations_and_alarms_read_as_lines() {
        let now = 1_700_000_000_000;
        let stats = json!({"depth": 3, "oldest_pending_age_s": 7500, "ingress_last_hour": 2, "dominant_failure_code": "UPSTREAM_5XX", "parked": {"count": 0, "oldest_age_s": null}});
        let f = figures(&stats, now);
        assert!(
            f.contains("3 pending")
                && f.contains("2h 5m ago (2023-11-14T20:08:20Z)")
                && f.contains("UPSTREAM_5XX"),
            "{f}"
        );
        let d = json!([{"destination": "billing", "breaker": {"state": "OPEN", "since": now - 60_000}, "parked": {"count": 4, "oldest_age_s": 30}, "deliveries_last_hour": {"total": 9, "delivered": 5, "dead_lettered": 1}, "rate_per_s": 2.5}, {"destination": "plain", "rate_per_s": null}]);
        let t = destinations(&d, now);
        assert!(
            t.contains("OPEN since 1m ago")
                && t.contains("5 delivered, 1 dead-lettered of 9")
                && t.contains("4 (oldest 30s ago)")
                && t.contains("2.5/s")
                && t.contains("none"),
            "{t}"
        );
        assert!(destinations(&json!([]), now).contains("none"));
        let alerts = json!([{"id": "dlq_oldest:dlq", "state": "firing", "since": now - 5000}, {"id": "x", "state": "resolved"}]);
        let a = firing(&alerts, now);
        assert!(a.contains("dlq_oldest:dlq") && !a.contains(" x "), "{a}");
        assert_eq!(firing(&json!([]), now), "  none");
    }
}
