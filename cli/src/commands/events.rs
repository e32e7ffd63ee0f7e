//! `hookrelay events …`: did it arrive (`list`, newest first, by source,
//! time, delivery status or idempotency key), and its story as a timeline
//! (`show`, by event id or idempotency key).

use super::story::timeline;
use super::{connect, id_segment, list, pairs, with_paging};
use crate::args::{EventsCommand, Global};
use crate::clock::now_ms;
use crate::failure::{Done, Failure, Outcome};
use crate::show::{self, age_of, cell, table};
use crate::time_input::parse_optional;
use serde_json::Value;

pub fn run(g: &Global, c: EventsCommand) -> Outcome {
    match c {
        EventsCommand::List {
            source,
            since,
            status,
            key,
            paging,
        } => {
            let now = now_ms();
            let since = parse_optional(since.as_deref(), "--since", now)?.map(|t| t.to_string());
            let query = pairs(&[
                ("source", source),
                ("since", since),
                ("delivery_status", status),
                ("key", key),
            ]);
            let relay = connect(g)?;
            list(&relay, g, "events", query, &paging, |items| {
                events(items, now)
            })
        }
        EventsCommand::Show { event } => show_story(g, &event),
    }
}

fn events(items: &[Value], now: i64) -> String {
    let rows = items
        .iter()
        .map(|e| {
            let deliveries: Vec<String> = e["deliveries"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|d| format!("{}:{}", cell(&d["destination"]), cell(&d["state"])))
                .collect();
            vec![
                cell(&e["event_id"]),
                cell(&e["idempotency_key"]),
                cell(&e["delivery_status"]),
                age_of(&e["ingested_at"], now),
                if deliveries.is_empty() {
                    "-".into()
                } else {
                    deliveries.join(", ")
                },
            ]
        })
        .collect();
    table(&["EVENT", "KEY", "STATUS", "INGESTED", "DELIVERIES"], rows)
}

/// The event id of an id or an idempotency key (looked up by key).
fn event_id(relay: &crate::http::Relay, event: &str) -> Result<String, Failure> {
    if event.starts_with("evt_") {
        return id_segment(event, "an event id (evt_…)");
    }
    let page = relay.get(
        "events",
        &with_paging(vec![("key", event.to_string())], &Default::default()),
    )?;
    page["items"][0]["event_id"].as_str().map(String::from).ok_or_else(|| {
        Failure::failed(
            format!("no event with idempotency key {event:?} in D1"),
            "check the key (source:delivery id), or list recent events with `hookrelay events list --source <source>`",
        )
    })
}

fn show_story(g: &Global, event: &str) -> Outcome {
    let relay = connect(g)?;
    let id = event_id(&relay, event)?;
    let story = relay.get(&format!("events/{id}"), &[])?;
    if g.json {
        show::print_json(&story);
        return Ok(Done::Ok);
    }
    println!("event {id}");
    for line in timeline(&story, now_ms()) {
        println!("  {line}");
    }
    Ok(Done::Ok)
}
