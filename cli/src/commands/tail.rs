//! `hookrelay tail`: what happens from now on, one line each (its time,
//! what happened, the event id, the idempotency key, the source, and for
//! a delivery its destination and outcome), until Ctrl-C or SIGTERM, which
//! end it cleanly with exit 0. It polls `GET /activity` with the cursor
//! each answer gives (no request is held open); a full page is followed at
//! once, else it waits `--interval`.

use super::connect;
use crate::args::{Global, TailArgs};
use crate::clock::now_ms;
use crate::failure::{Done, Failure, Outcome};
use crate::http::is_transient;
use crate::show::{cell, instant};
use serde_json::Value;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Items per poll: a busy relay is caught up a page at a time.
const PAGE: u32 = 200;

pub fn run(g: &Global, a: &TailArgs) -> Outcome {
    if !(0.1..=60.0).contains(&a.interval) {
        return Err(Failure::usage(
            format!("--interval {} is out of bounds", a.interval),
            "give 0.1 to 60 seconds",
        ));
    }
    let relay = connect(g)?;
    let stop = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&stop);
    ctrlc::set_handler(move || flag.store(true, Ordering::SeqCst)).map_err(|e| {
        Failure::failed(
            format!("cannot watch for Ctrl-C: {e}"),
            "run it again; if it persists, report it",
        )
    })?;
    let mut after = now_ms().to_string();
    // On stderr, so `--json` output stays one object per line.
    eprintln!(
        "following {} from {} (Ctrl-C to stop)",
        relay.base,
        instant(now_ms())
    );
    while !stop.load(Ordering::SeqCst) {
        let mut query = vec![("after", after.clone()), ("limit", PAGE.to_string())];
        query.extend(a.source.clone().map(|s| ("source", s)));
        query.extend(a.destination.clone().map(|d| ("destination", d)));
        let data = match relay.get("activity", &query) {
            Ok(data) => data,
            // A relay restarting or busy (a deploy, D1 briefly away) is
            // waited out; anything else (a refused token) ends the tail.
            Err(f) if is_transient(&f) => {
                eprintln!("{}; trying again", f.what);
                pause(&stop, Duration::from_secs(2));
                continue;
            }
            Err(f) => return Err(f),
        };
        let items = data["items"].as_array().cloned().unwrap_or_default();
        for item in &items {
            match g.json {
                true => println!("{item}"),
                false => println!("{}", line(item)),
            }
        }
        if let Some(next) = data["next_cursor"].as_str() {
            after = next.to_string();
        }
        if items.len() < PAGE as usize {
            pause(&stop, Duration::from_secs_f64(a.interval));
        }
    }
    Ok(Done::Ok)
}

/// Sleeps `d`, waking early when asked to stop.
fn pause(stop: &AtomicBool, d: Duration) {
    let until = Instant::now() + d;
    while !stop.load(Ordering::SeqCst) && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// One item as a line: time, what happened, ids, source, destination.
pub fn line(item: &Value) -> String {
    let what = match item["kind"].as_str() {
        Some("event") => "accepted".to_string(),
        Some("delivery") => format!(
            "{} -> {}",
            cell(&item["outcome"]),
            cell(&item["destination"])
        ),
        Some("dead_letter") => format!(
            "dead-lettered {} {}",
            cell(&item["entry_id"]),
            cell(&item["code"])
        ),
        _ => cell(&item["kind"]),
    };
    let code = match (item["kind"].as_str(), item["code"].as_str()) {
        (Some("delivery"), Some(c)) => format!(" {c}"),
        _ => String::new(),
    };
    format!(
        "{}  {:<7} {}  {}  {}{}  {}",
        item["at"].as_i64().map_or("-".into(), instant),
        cell(&item["source"]),
        cell(&item["event_id"]),
        cell(&item["idempotency_key"]),
        what,
        code,
        item["destination"]
            .as_str()
            .filter(|_| item["kind"] == "dead_letter")
            .map_or(String::new(), |d| format!("({d})")),
    )
    .trim_end()
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_kind_reads_as_one_line_naming_the_event() {
        let e = json!({"at": 1_700_000_000_000_i64, "kind": "event", "event_id": "evt_1", "idempotency_key": "demo:1", "source": "demo"});
        assert_eq!(
            line(&e),
            "2023-11-14T22:13:20Z  demo    evt_1  demo:1  accepted"
        );
        let d = json!({"at": 0, "kind": "delivery", "event_id": "evt_1", "idempotency_key": "demo:1", "source": "demo", "destination": "billing", "outcome": "dead_lettered", "code": "UPSTREAM_4XX"});
        assert!(
            line(&d).ends_with("dead_lettered -> billing UPSTREAM_4XX"),
            "{}",
            line(&d)
        );
        let l = json!({"at": 0, "kind": "dead_letter", "event_id": "evt_1", "idempotency_key": "demo:1", "source": "demo", "destination": "billing", "entry_id": "dlq_1", "code": "UPSTREAM_4XX"});
        assert!(
            line(&l).ends_with("dead-lettered dlq_1 UPSTREAM_4XX  (billing)"),
            "{}",
            line(&l)
        );
    }
}
