//! `GET /api/v1/admin/alerts`: firing and recently resolved alarms, each
//! with its delivery (and whether an alert is still owed: never without a
//! receiver), the D1 episodes merged with the R2 cannot-store state.

use super::cannot_store::CannotStoreState;
use super::machine::{AlarmRecord, Delivery, Owing};
use super::AlarmId;
use crate::state::{AlarmKind, AlarmState};
use crate::UnixMillis;
use serde_json::{json, Value};

/// One listed alarm, in the route's shape.
fn item(
    id: &AlarmId,
    state: AlarmState,
    since: UnixMillis,
    resolved_at: Option<UnixMillis>,
    detail: &Value,
    d: &Delivery,
    owed: bool,
) -> Value {
    json!({
        "id": id.to_string(), "kind": id.kind.as_str(), "subject": id.subject,
        "state": state.as_str(), "since": since, "resolved_at": resolved_at, "detail": detail,
        "delivery": {"sent": d.sent.map(AlarmState::as_str), "owed": owed, "attempts": d.attempts,
            "last_attempt_at": d.last_attempt_at, "last_error": d.last_error},
    })
}

/// The items at `now`: `stored` (firing, or resolved at or after
/// `resolved_since`) plus the cannot-store state when it is firing or
/// resolved since then; firing first, then the newest resolved first.
pub fn items(
    stored: &[AlarmRecord],
    cannot: Option<&CannotStoreState>,
    resolved_since: UnixMillis,
    owing: &Owing,
    now: UnixMillis,
) -> Vec<Value> {
    let mut rows: Vec<(bool, UnixMillis, Value)> = stored
        .iter()
        .map(|r| {
            let v = item(
                &r.id,
                r.state,
                r.since,
                r.resolved_at,
                &r.detail,
                &r.delivery,
                r.owes_alert(owing, now),
            );
            (
                r.state == AlarmState::Firing,
                r.resolved_at.unwrap_or(r.since),
                v,
            )
        })
        .collect();
    if let Some(c) = cannot.filter(|c| {
        c.state == AlarmState::Firing || c.resolved_at.is_some_and(|t| t >= resolved_since)
    }) {
        let alert = c.alert();
        let id = AlarmId::new(AlarmKind::DlqCannotStore, "dlq");
        let v = item(
            &id,
            c.state,
            c.since,
            c.resolved_at,
            &alert.detail,
            &c.delivery(),
            owing.receiver && c.owes_alert(),
        );
        rows.push((
            c.state == AlarmState::Firing,
            c.resolved_at.unwrap_or(c.since),
            v,
        ));
    }
    crate::support::small_sort::sort_by(&mut rows, |a, b| b.0.cmp(&a.0).then(b.1.cmp(&a.1)));
    rows.into_iter().map(|(_, _, v)| v).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::alarms::cannot_store::{plan, Report, StoreFailure};

    const OWING: Owing = Owing {
        receiver: true,
        resolved_for_ms: 1_000,
    };

    fn rec(
        kind: AlarmKind,
        state: AlarmState,
        since: i64,
        resolved_at: Option<i64>,
    ) -> AlarmRecord {
        AlarmRecord {
            id: AlarmId::new(kind, "dlq"),
            state,
            since,
            resolved_at,
            detail: json!({"pending": 3}),
            clear_runs: 0,
            delivery: Delivery {
                last_error: Some("UPSTREAM_5XX: downstream answered 500 (server error)".into()),
                attempts: 2,
                ..Delivery::default()
            },
        }
    }

    #[test]
    fn firing_come_first_then_the_newest_resolved_with_the_cannot_store_state_merged() {
        let stored = [
            rec(AlarmKind::DlqOldest, AlarmState::Resolved, 10, Some(20)),
            rec(AlarmKind::DlqIngress, AlarmState::Firing, 5, None),
            rec(AlarmKind::Storage, AlarmState::Resolved, 1, Some(30)),
        ];
        let failure = StoreFailure {
            code: "D1_UNAVAILABLE".into(),
            message: "no such table: dead_letters".into(),
            queue_message_id: "m1".into(),
            source: None,
        };
        let cannot = plan(None, &Report::Failure(failure), 40).next.unwrap();
        let ids: Vec<String> = items(&stored, Some(&cannot), 0, &OWING, 40)
            .iter()
            .map(|v| v["id"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(
            ids,
            [
                "dlq_cannot_store:dlq",
                "dlq_ingress:dlq",
                "storage:dlq",
                "dlq_oldest:dlq"
            ]
        );
        let first = &items(&stored, None, 0, &OWING, 40)[0];
        assert_eq!(first["delivery"]["attempts"], 2);
        assert_eq!(first["delivery"]["sent"], Value::Null);
        assert!(first["delivery"]["last_error"]
            .as_str()
            .unwrap()
            .contains("500"));
        assert_eq!(first["delivery"]["owed"], true);
    }

    #[test]
    fn without_a_receiver_the_listing_says_nothing_is_owed() {
        let stored = [
            rec(AlarmKind::DlqIngress, AlarmState::Firing, 5, None),
            rec(AlarmKind::DlqOldest, AlarmState::Resolved, 10, Some(20)),
        ];
        let none = Owing {
            receiver: false,
            ..OWING
        };
        for (owing, want) in [(&OWING, true), (&none, false)] {
            for item in items(&stored, None, 0, owing, 40) {
                assert_eq!(item["delivery"]["owed"], want, "{item}");
            }
        }
    }

    #[test]
    fn a_cannot_store_episode_resolved_long_ago_is_not_listed() {
        let failure = StoreFailure {
            code: "D1_UNAVAILABLE".into(),
            message: "x".into(),
            queue_message_id: "m".into(),
            source: None,
        };
        let mut c = plan(None, &Report::Failure(failure), 40).next.unwrap();
        c.state = AlarmState::Resolved;
        c.resolved_at = Some(50);
        assert!(items(&[], Some(&c), 60, &OWING, 60).is_empty());
        assert_eq!(items(&[], Some(&c), 50, &OWING, 60).len(), 1);
    }
}
