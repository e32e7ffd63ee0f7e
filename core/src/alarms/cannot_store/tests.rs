//! The dlq_cannot_store alarm's state object: opening, the send lease, and resolution.

use super::*;

fn failure(n: u32) -> Report {
    Report::Failure(StoreFailure {
        code: "D1_UNAVAILABLE".into(),
        message: format!("no such table: dead_letters ({n})"),
        queue_message_id: format!("msg-{n}"),
        source: Some("demo-stripe".into()),
    })
}

/// Applies a plan like the glue: the put wins, and a send is answered `post`.
fn apply(
    obj: &mut Option<CannotStoreState>,
    report: &Report,
    now: i64,
    post: Result<(), String>,
) -> bool {
    let p = plan(obj.as_ref(), report, now);
    if let Some(next) = p.next {
        *obj = Some(next);
    }
    if p.send {
        *obj = Some(obj.as_ref().unwrap().after_post(now, post));
    }
    p.send
}

#[test]
fn many_reports_of_one_condition_send_one_alert_then_one_resolve() {
    let mut obj = None;
    let mut sends = Vec::new();
    for (now, report) in [
        (0, failure(1)),
        (1, failure(2)),
        (2, failure(3)),
        (30_000, Report::Watch { store_ok: false }),
        (60_000, Report::Watch { store_ok: true }),
        (122_000, Report::Watch { store_ok: true }),
        (400_000, Report::Watch { store_ok: true }),
    ] {
        if apply(&mut obj, &report, now, Ok(())) {
            sends.push((now, obj.as_ref().unwrap().state));
        }
    }
    assert_eq!(
        sends,
        [(0, AlarmState::Firing), (122_000, AlarmState::Resolved)]
    );
    let o = obj.unwrap();
    assert_eq!((o.failures, o.since, o.resolved_at), (3, 0, Some(122_000)));
    assert_eq!(o.alert().operation_id(), "dlq_cannot_store:dlq:resolved:0");
}

#[test]
fn a_racing_writer_that_reads_the_winners_object_does_not_send_again() {
    let first = plan(None, &failure(1), 0);
    assert!(first.send);
    let won = first.next.unwrap();
    // Another isolate's put lost; it rereads the winner's object (lease held).
    let second = plan(Some(&won), &failure(2), 5);
    assert!(!second.send);
    assert_eq!(second.next.unwrap().failures, 2);
}

#[test]
fn a_failed_post_is_sent_again_once_the_lease_has_passed() {
    let mut obj = None;
    assert!(apply(
        &mut obj,
        &failure(1),
        0,
        Err("receiver answered 500".into())
    ));
    assert_eq!(
        obj.as_ref().unwrap().last_error.as_deref(),
        Some("receiver answered 500")
    );
    // The sender died holding a lease: nobody sends until it passes.
    let held = plan(obj.as_ref(), &Report::Watch { store_ok: false }, 1)
        .next
        .unwrap();
    let mut obj2 = Some(CannotStoreState {
        sending_until: Some(SEND_LEASE_MS),
        ..held
    });
    assert!(!apply(
        &mut obj2,
        &Report::Watch { store_ok: false },
        SEND_LEASE_MS - 1,
        Ok(())
    ));
    assert!(apply(
        &mut obj2,
        &Report::Watch { store_ok: false },
        SEND_LEASE_MS,
        Ok(())
    ));
    assert!(!obj2.unwrap().owes_alert());
}

#[test]
fn a_watch_with_nothing_to_do_writes_nothing() {
    assert_eq!(
        plan(None, &Report::Watch { store_ok: true }, 0),
        Plan {
            next: None,
            send: false
        }
    );
    let mut obj = None;
    apply(&mut obj, &failure(1), 0, Ok(()));
    let quiet = plan(obj.as_ref(), &Report::Watch { store_ok: false }, 10);
    assert_eq!(
        quiet,
        Plan {
            next: None,
            send: false
        }
    );
}

#[test]
fn a_new_failure_after_resolving_opens_a_new_episode_and_alerts_again() {
    let mut obj = None;
    apply(&mut obj, &failure(1), 0, Ok(()));
    apply(
        &mut obj,
        &Report::Watch { store_ok: true },
        QUIET_MS,
        Ok(()),
    );
    assert!(apply(&mut obj, &failure(2), QUIET_MS + 10, Ok(())));
    let o = obj.unwrap();
    assert_eq!(
        (o.state, o.since, o.failures),
        (AlarmState::Firing, QUIET_MS + 10, 1)
    );
}

#[test]
fn the_object_roundtrips_as_json_and_refuses_unknown_fields() {
    let mut obj = None;
    apply(&mut obj, &failure(1), 0, Ok(()));
    let o = obj.unwrap();
    let text = serde_json::to_string(&o).unwrap();
    assert_eq!(serde_json::from_str::<CannotStoreState>(&text).unwrap(), o);
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["surprise"] = serde_json::json!(1);
    assert!(serde_json::from_value::<CannotStoreState>(v).is_err());
}
