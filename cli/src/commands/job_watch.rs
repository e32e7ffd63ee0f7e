//! Following a job to its end (`replay --watch`, `jobs watch`): it polls
//! `GET /jobs/:id` once a second, draws a progress bar on a terminal and
//! prints a line per change otherwise, says once when the job waits for
//! approval, and ends with the job's outcome: exit 0 for a job that
//! completed with no failed replay, 1 for one that aborted, was cancelled
//! or failed replays.

use crate::failure::{Done, Failure, Outcome};
use crate::http::Relay;
use crate::show::{self, cell};
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::Value;
use std::time::Duration;

/// The statuses a job never leaves.
const FINAL: [&str; 3] = ["completed", "aborted", "cancelled"];

/// Follows job `id` until it ends.
pub fn follow(relay: &Relay, id: &str, json: bool) -> Outcome {
    let bar = (!json && show::stdout_is_terminal()).then(progress_bar);
    let mut last_line = String::new();
    let mut told_approval = false;
    let job = loop {
        let job = relay.get(&format!("jobs/{id}"), &[])?;
        let line = progress_line(&job);
        if let Some(bar) = &bar {
            bar.set_length(job["matched"].as_u64().unwrap_or(0).max(1));
            bar.set_position(done_count(&job));
            bar.set_message(line.clone());
        } else if !json && line != last_line {
            println!("{line}");
        }
        last_line = line;
        if job["status"] == "awaiting_approval" && !told_approval {
            told_approval = true;
            let hint = format!("the canary passed; {id} waits for approval: run `hookrelay jobs approve {id}` (or cancel it)");
            match &bar {
                Some(bar) => bar.println(hint),
                None if !json => println!("{hint}"),
                None => {}
            }
        }
        if FINAL.iter().any(|s| job["status"] == *s) {
            break job;
        }
        std::thread::sleep(Duration::from_secs(1));
    };
    if let Some(bar) = bar {
        bar.finish_with_message(last_line);
    }
    if json {
        show::print_json(&job);
    }
    verdict(id, &job)
}

fn progress_bar() -> ProgressBar {
    let bar = ProgressBar::new(1);
    let style = ProgressStyle::with_template("{bar:30} {pos}/{len} {msg}")
        .unwrap_or_else(|_| ProgressStyle::default_bar());
    bar.set_style(style);
    bar.enable_steady_tick(Duration::from_millis(200));
    bar
}

/// Entries whose turn came: attempted or skipped.
fn done_count(job: &Value) -> u64 {
    job["attempted"].as_u64().unwrap_or(0) + job["skipped"].as_u64().unwrap_or(0)
}

/// One line of progress: status and counts.
pub fn progress_line(job: &Value) -> String {
    format!(
        "{} {}: {}/{} done ({} succeeded, {} failed, {} deduped, {} skipped), {} remaining{}",
        cell(&job["id"]),
        cell(&job["status"]),
        done_count(job),
        cell(&job["matched"]),
        cell(&job["succeeded"]),
        cell(&job["failed"]),
        cell(&job["deduped"]),
        cell(&job["skipped"]),
        cell(&job["remaining"]),
        canary_note(&job["canary"])
    )
}

fn canary_note(canary: &Value) -> String {
    match canary["passed"].as_bool() {
        Some(true) => "; canary passed".into(),
        Some(false) => "; canary failed".into(),
        None if canary["ids"].as_array().is_some_and(|ids| !ids.is_empty()) => {
            "; canary running".into()
        }
        None => String::new(),
    }
}

/// The exit a finished job means.
pub fn verdict(id: &str, job: &Value) -> Outcome {
    match job["status"].as_str() {
        Some("completed") if job["failed"].as_u64().unwrap_or(0) == 0 => Ok(Done::Ok),
        Some("completed") => Err(Failure::failed(
            format!(
                "{id} completed, but {} replays failed",
                cell(&job["failed"])
            ),
            "list them with `hookrelay dlq list --status pending`, fix the cause, and replay again",
        )),
        Some("aborted") => Err(Failure::failed(
            format!("{id} aborted: {}", cell(&job["abort_reason"])),
            "read the failed entries (`hookrelay dlq groups`), fix the cause, then start a new job",
        )),
        other => Err(Failure::failed(
            format!("{id} ended {}", other.unwrap_or("in an unknown status")),
            "start a new job when you are ready: `hookrelay replay --reason … --watch`",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn progress_reads_as_one_line_and_the_end_as_an_exit() {
        let job = json!({"id": "job_1", "status": "running", "matched": 13, "attempted": 5, "succeeded": 5, "failed": 0, "deduped": 0, "skipped": 1, "remaining": 7, "canary": {"ids": ["dlq_1"], "passed": true}});
        assert_eq!(
            progress_line(&job),
            "job_1 running: 6/13 done (5 succeeded, 0 failed, 0 deduped, 1 skipped), 7 remaining; canary passed"
        );
        assert_eq!(
            verdict("job_1", &json!({"status": "completed", "failed": 0})),
            Ok(Done::Ok)
        );
        let aborted = verdict(
            "job_1",
            &json!({"status": "aborted", "abort_reason": "the canary failed"}),
        )
        .unwrap_err();
        assert!(aborted.what.contains("the canary failed") && aborted.exit_code() == 1);
        assert!(verdict("job_1", &json!({"status": "completed", "failed": 2})).is_err());
        assert!(verdict("job_1", &json!({"status": "cancelled"})).is_err());
    }
}
