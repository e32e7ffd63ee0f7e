//! `hookrelay jobs …`: the jobs, newest first (`list`), one job (`show`),
//! following one (`watch`), and steering one (`approve`, `pause`,
//! `resume`, `cancel`), each answered with the job's new status.

use super::job_watch::{follow, progress_line};
use super::{connect, id_segment, list};
use crate::args::{Global, JobsCommand};
use crate::clock::now_ms;
use crate::failure::{Done, Outcome};
use crate::show::{self, age_of, cell, table};
use serde_json::{json, Value};

pub fn run(g: &Global, c: JobsCommand) -> Outcome {
    match c {
        JobsCommand::List { paging } => {
            let relay = connect(g)?;
            list(&relay, g, "jobs", vec![], &paging, |items| {
                jobs(items, now_ms())
            })
        }
        JobsCommand::Show { id } => {
            let relay = connect(g)?;
            let job = relay.get(
                &format!("jobs/{}", id_segment(&id, "a job id (job_…)")?),
                &[],
            )?;
            if g.json {
                show::print_json(&job);
            } else {
                println!("{}", details(&job, now_ms()));
            }
            Ok(Done::Ok)
        }
        JobsCommand::Watch { id } => {
            let relay = connect(g)?;
            follow(&relay, &id_segment(&id, "a job id (job_…)")?, g.json)
        }
        JobsCommand::Approve { id } => steer(g, &id, "approve"),
        JobsCommand::Pause { id } => steer(g, &id, "pause"),
        JobsCommand::Resume { id } => steer(g, &id, "resume"),
        JobsCommand::Cancel { id } => steer(g, &id, "cancel"),
    }
}

fn jobs(items: &[Value], now: i64) -> String {
    let rows = items
        .iter()
        .map(|j| {
            vec![
                cell(&j["id"]),
                cell(&j["action"]),
                cell(&j["status"]),
                cell(&j["matched"]),
                cell(&j["succeeded"]),
                cell(&j["failed"]),
                cell(&j["remaining"]),
                age_of(&j["created_at"], now),
                cell(&j["actor"]),
            ]
        })
        .collect();
    table(
        &[
            "ID",
            "ACTION",
            "STATUS",
            "MATCHED",
            "SUCCEEDED",
            "FAILED",
            "REMAINING",
            "CREATED",
            "BY",
        ],
        rows,
    )
}

fn details(j: &Value, now: i64) -> String {
    [
        progress_line(j),
        format!(
            "action   {} by {}: {}",
            cell(&j["action"]),
            cell(&j["actor"]),
            cell(&j["reason"])
        ),
        format!("filter   {}", j["filter"]),
        format!(
            "canary   {} (passed: {})",
            cell(&j["canary"]["ids"]),
            cell(&j["canary"]["passed"])
        ),
        format!("created  {}", age_of(&j["created_at"], now)),
        format!("finished {}", age_of(&j["finished_at"], now)),
        format!("aborted  {}", cell(&j["abort_reason"])),
        format!("actions  {}", cell(&j["actions"])),
    ]
    .join("\n")
}

fn steer(g: &Global, id: &str, command: &str) -> Outcome {
    let relay = connect(g)?;
    let path = format!("jobs/{}/{command}", id_segment(id, "a job id (job_…)")?);
    let job = relay.post(&path, &json!({}))?.data;
    if g.json {
        show::print_json(&job);
    } else {
        println!(
            "{id}: {command} -> {} (actions now: {})",
            cell(&job["status"]),
            cell(&job["actions"])
        );
    }
    Ok(Done::Ok)
}
