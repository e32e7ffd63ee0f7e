//! `hookrelay replay`: a replay job over the dead letters a filter matches
//! (`POST /jobs`, DESIGN §4): `--dry-run` prints what it would take (by
//! signature, by source, the canary) and changes nothing; otherwise the job
//! is created and, with `--watch`, followed to its end.

use super::connect;
use super::job_watch::follow;
use crate::args::{Approve, EntryFilter, Global, ReplayArgs};
use crate::clock::now_ms;
use crate::failure::{Done, Failure, Outcome};
use crate::show::{self, cell, table};
use crate::time_input::parse_optional;
use serde_json::{json, Map, Value};

pub fn run(g: &Global, a: &ReplayArgs) -> Outcome {
    let body = job_body(a, now_ms())?;
    let relay = connect(g)?;
    let answer = relay.post("jobs", &body)?;
    let data = answer.data;
    if a.dry_run {
        if g.json {
            show::print_json(&data);
        } else {
            println!("{}", preview(&data));
        }
        return Ok(Done::Ok);
    }
    let id = data["id"].as_str().ok_or_else(|| {
        Failure::failed(
            "the relay created no job id",
            "check the relay's version: `hookrelay status`",
        )
    })?;
    if a.watch {
        if !g.json {
            println!("{id} created: {} entries matched", cell(&data["matched"]));
        }
        return follow(&relay, id, g.json);
    }
    if g.json {
        show::print_json(&data);
    } else {
        println!(
            "{id} created ({}): {} entries matched; follow it with `hookrelay jobs watch {id}`",
            cell(&data["status"]),
            cell(&data["matched"])
        );
    }
    Ok(Done::Ok)
}

/// The job's body: the action, the reason, the filter, the options given.
fn job_body(a: &ReplayArgs, now: i64) -> Result<Value, Failure> {
    let mut body =
        json!({"action": "replay", "reason": a.reason, "filter": filter(&a.filter, now)?});
    if a.dry_run {
        body["dry_run"] = json!(true);
    }
    if let Some(size) = a.canary {
        body["canary"] = json!({"size": size});
    }
    if let Some(rate) = a.rate {
        body["rate_per_s"] = json!(rate);
    }
    if let Some(approve) = a.approve {
        body["approve"] = json!(match approve {
            Approve::Manual => "manual",
            Approve::Auto => "auto",
        });
    }
    Ok(body)
}

/// The job filter: the entry filters, and the times as unix ms.
fn filter(f: &EntryFilter, now: i64) -> Result<Value, Failure> {
    let mut out = Map::new();
    for (k, v) in [
        ("status", &f.status),
        ("source", &f.source),
        ("destination", &f.destination),
        ("code", &f.code),
        ("class", &f.class),
        ("signature", &f.signature),
    ] {
        if let Some(v) = v {
            out.insert(k.into(), json!(v));
        }
    }
    for (k, raw, flag) in [
        ("since", &f.since, "--since"),
        ("until", &f.until, "--until"),
    ] {
        if let Some(t) = parse_optional(raw.as_deref(), flag, now)? {
            out.insert(k.into(), json!(t));
        }
    }
    Ok(Value::Object(out))
}

/// A dry run's answer: how many, by signature and source, and the canary.
fn preview(d: &Value) -> String {
    let rows = |list: &Value, cols: &[&str]| -> Vec<Vec<String>> {
        list.as_array()
            .into_iter()
            .flatten()
            .map(|r| cols.iter().map(|c| cell(&r[*c])).collect())
            .collect()
    };
    [
        format!(
            "would replay {} entries (dry run: nothing changed)",
            cell(&d["matched"])
        ),
        table(
            &["SIGNATURE", "CODE", "COUNT"],
            rows(&d["by_signature"], &["signature", "code", "count"]),
        ),
        table(
            &["SOURCE", "COUNT"],
            rows(&d["by_source"], &["source", "count"]),
        ),
        format!("canary: {}", cell(&d["canary_ids"])),
    ]
    .join("\n\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_job_body_carries_the_filter_and_the_options_given() {
        let a = ReplayArgs {
            reason: "destination fixed".into(),
            filter: EntryFilter {
                source: Some("demo-hmac".into()),
                since: Some("1h".into()),
                ..Default::default()
            },
            dry_run: false,
            canary: Some(1),
            rate: Some(4.0),
            approve: Some(Approve::Auto),
            watch: true,
        };
        let body = job_body(&a, 3_600_000).unwrap();
        assert_eq!(
            body,
            json!({"action": "replay", "reason": "destination fixed", "filter": {"source": "demo-hmac", "since": 0}, "canary": {"size": 1}, "rate_per_s": 4.0, "approve": "auto"})
        );
        let p = preview(
            &json!({"matched": 2, "by_signature": [{"signature": "sig_1", "code": "UPSTREAM_5XX", "count": 2}], "by_source": [], "canary_ids": ["dlq_1"]}),
        );
        assert!(
            p.contains("would replay 2") && p.contains("sig_1") && p.contains("canary: dlq_1"),
            "{p}"
        );
    }
}
