//! Alarm episodes: fire once, resolve after two clear runs, no repeats, delivery retries.

use super::*;
use crate::state::AlarmKind;
use serde_json::json;

fn id() -> AlarmId {
    AlarmId::new(AlarmKind::BreakerOpen, "https://down.example")
}

fn cond(n: u64) -> Condition {
    Condition {
        id: id(),
        detail: json!({"n": n}),
    }
}

/// Runs the machine over a sequence of (now, condition holds) and returns
/// the ids fired and resolved per run, applying its writes like the glue.
fn run(seq: &[(i64, bool)]) -> (Vec<(usize, usize)>, Vec<AlarmRecord>) {
    let mut stored: Vec<AlarmRecord> = Vec::new();
    let mut per_run = Vec::new();
    for (i, (now, holds)) in seq.iter().enumerate() {
        let firing: Vec<AlarmRecord> = stored
            .iter()
            .filter(|r| r.state == AlarmState::Firing)
            .cloned()
            .collect();
        let active = if *holds { vec![cond(i as u64)] } else { vec![] };
        let out = advance(&firing, &active, *now);
        for rec in out.changed {
            match stored
                .iter_mut()
                .find(|r| r.id == rec.id && r.since == rec.since)
            {
                Some(slot) => *slot = rec,
                None => stored.push(rec),
            }
        }
        per_run.push((out.fired.len(), out.resolved.len()));
    }
    (per_run, stored)
}

#[test]
fn a_condition_fires_once_and_resolves_once() {
    let (runs, stored) = run(&[
        (0, false),
        (1, true),
        (2, true),
        (3, true),
        (4, false),
        (5, false),
        (6, false),
    ]);
    assert_eq!(
        runs,
        [(0, 0), (1, 0), (0, 0), (0, 0), (0, 0), (0, 1), (0, 0)]
    );
    assert_eq!(stored.len(), 1);
    let ep = &stored[0];
    assert_eq!(
        (ep.state, ep.since, ep.resolved_at),
        (AlarmState::Resolved, 1, Some(5))
    );
    assert_eq!(
        ep.detail,
        json!({"n": 3}),
        "the detail is the last seen while firing"
    );
}

#[test]
fn a_flapping_condition_stays_one_episode_and_does_not_spam() {
    let seq: Vec<(i64, bool)> = (0..20).map(|i| (i, i % 2 == 0)).collect();
    let (runs, stored) = run(&seq);
    let fired: usize = runs.iter().map(|r| r.0).sum();
    let resolved: usize = runs.iter().map(|r| r.1).sum();
    assert_eq!((fired, resolved, stored.len()), (1, 0, 1));
}

#[test]
fn a_condition_that_returns_after_resolving_opens_a_new_episode() {
    let (runs, stored) = run(&[(1, true), (2, false), (3, false), (4, true)]);
    assert_eq!(runs, [(1, 0), (0, 0), (0, 1), (1, 0)]);
    let sinces: Vec<(i64, AlarmState)> = stored.iter().map(|r| (r.since, r.state)).collect();
    assert_eq!(sinces, [(1, AlarmState::Resolved), (4, AlarmState::Firing)]);
}

#[test]
fn an_unchanged_firing_alarm_writes_nothing() {
    let rec = advance(&[], &[cond(1)], 10).changed.remove(0);
    let again = advance(std::slice::from_ref(&rec), &[cond(1)], 20);
    assert_eq!(again, RunOutcome::default());
}

const DAY: i64 = 86_400_000;

fn owing(receiver: bool) -> Owing {
    Owing {
        receiver,
        resolved_for_ms: 90 * DAY,
    }
}

#[test]
fn an_alert_is_owed_until_a_post_succeeds_and_is_retried_on_the_next_run() {
    let to = owing(true);
    let rec = advance(&[], &[cond(1)], 10).changed.remove(0);
    assert_eq!(
        due_alerts(
            std::slice::from_ref(&rec),
            &owing(false),
            10,
            MAX_ALERTS_PER_RUN
        )
        .len(),
        0,
        "no receiver: recorded only"
    );
    assert_eq!(
        due_alerts(std::slice::from_ref(&rec), &to, 10, MAX_ALERTS_PER_RUN).len(),
        1
    );
    let failed = after_post(&rec, 11, Err("receiver answered 503".into()));
    assert!(failed.owes_alert(&to, 11));
    assert_eq!(
        failed.delivery.last_error.as_deref(),
        Some("receiver answered 503")
    );
    assert_eq!(
        due_alerts(std::slice::from_ref(&failed), &to, 12, MAX_ALERTS_PER_RUN).len(),
        1,
        "retried next run"
    );
    let ok = after_post(&failed, 12, Ok(()));
    assert!(!ok.owes_alert(&to, 12));
    assert_eq!(
        (ok.delivery.attempts, ok.delivery.last_error.clone()),
        (2, None)
    );
    // Resolving owes the resolved alert, once.
    let cleared = advance(std::slice::from_ref(&ok), &[], 13)
        .changed
        .remove(0);
    let resolved = advance(std::slice::from_ref(&cleared), &[], 14)
        .changed
        .remove(0);
    assert!(resolved.owes_alert(&to, 14));
    assert!(!after_post(&resolved, 15, Ok(())).owes_alert(&to, 15));
}

#[test]
fn nothing_is_owed_without_a_receiver_and_a_resolved_alert_is_owed_only_as_long_as_the_history_is_kept(
) {
    let firing = advance(&[], &[cond(1)], 0).changed.remove(0);
    let resolved_at = 1_000;
    let resolved = AlarmRecord {
        state: AlarmState::Resolved,
        resolved_at: Some(resolved_at),
        ..firing.clone()
    };
    let delivered = after_post(&resolved, resolved_at, Ok(()));
    let kept = 90 * DAY;
    let table: [(&str, &AlarmRecord, bool, i64, bool); 9] = [
        ("firing, no receiver", &firing, false, 1, false),
        (
            "resolved, no receiver",
            &resolved,
            false,
            resolved_at,
            false,
        ),
        ("firing, with a receiver", &firing, true, 1, true),
        (
            "firing for longer than the history is kept: still owed",
            &firing,
            true,
            10 * kept,
            true,
        ),
        ("resolved just now", &resolved, true, resolved_at, true),
        (
            "resolved as long ago as the history is kept",
            &resolved,
            true,
            resolved_at + kept,
            true,
        ),
        (
            "resolved longer ago: given up, the sweep may take it",
            &resolved,
            true,
            resolved_at + kept + 1,
            false,
        ),
        (
            "resolved and delivered",
            &delivered,
            true,
            resolved_at,
            false,
        ),
        (
            "resolved and delivered, no receiver",
            &delivered,
            false,
            resolved_at,
            false,
        ),
    ];
    for (case, rec, receiver, now, want) in table {
        assert_eq!(rec.owes_alert(&owing(receiver), now), want, "{case}");
    }
}

#[test]
fn owing_lasts_as_long_as_the_alarms_age_rule_and_reads_no_resolved_episode_without_a_receiver() {
    let retention = crate::retention::settings::RetentionConfig {
        dlq_retention_ms: 7 * DAY,
        ..crate::retention::settings::RetentionConfig::default()
    };
    let with = Owing::new(true, &retention);
    assert_eq!(with.resolved_for_ms, 7 * DAY);
    assert_eq!(with.resolved_cutoff(10 * DAY), 3 * DAY);
    assert_eq!(with.resolved_read_limit(), MAX_ALERTS_PER_RUN as u32);
    assert_eq!(Owing::new(false, &retention).resolved_read_limit(), 0);
}

#[test]
fn at_most_a_bounded_number_of_alerts_go_out_per_run_oldest_first() {
    let active: Vec<Condition> = (0..25)
        .map(|i| Condition {
            id: AlarmId::new(AlarmKind::SourceSilent, format!("s{i:02}")),
            detail: json!({}),
        })
        .collect();
    let out = advance(&[], &active, 10);
    let due = due_alerts(&out.changed, &owing(true), 10, MAX_ALERTS_PER_RUN);
    assert_eq!(due.len(), MAX_ALERTS_PER_RUN);
    assert_eq!(due[0].id.subject, "s00");
    let squeezed = due_alerts(&out.changed, &owing(true), 10, 3);
    assert_eq!(squeezed.len(), 3, "what the budget leaves");
}

#[test]
fn a_backlog_of_owed_resolves_never_holds_back_an_alarm_firing_now() {
    let resolved: Vec<AlarmRecord> = (0..25)
        .map(|i| AlarmRecord {
            id: AlarmId::new(AlarmKind::SourceSilent, format!("s{i:02}")),
            state: AlarmState::Resolved,
            since: i,
            resolved_at: Some(100 + i),
            detail: json!({}),
            clear_runs: 2,
            delivery: Delivery::default(),
        })
        .collect();
    let mut episodes = resolved;
    episodes.extend(advance(&[], &[cond(1)], 1_000).changed);
    let due = due_alerts(&episodes, &owing(true), 1_000, MAX_ALERTS_PER_RUN);
    assert_eq!(due.len(), MAX_ALERTS_PER_RUN);
    assert_eq!(
        (due[0].id.clone(), due[0].state),
        (id(), AlarmState::Firing),
        "the firing alert goes first"
    );
    assert_eq!(due[1].id.subject, "s00", "then the oldest resolves");
}
