//! The watchdog's figures turned into conditions, one alarm kind at a time.

use super::*;

const NOW: UnixMillis = 1_800_000_000_000;
const MIN: i64 = 60_000;

fn ids(f: &Figures) -> Vec<String> {
    evaluate(f, &AlarmConfig::default(), NOW)
        .iter()
        .map(|c| c.id.to_string())
        .collect()
}

fn dlq(pending: u64, oldest_age_ms: Option<i64>, ingress: u64, evicted: u64) -> Figures {
    Figures {
        dlq: DlqFigures {
            pending,
            capacity: 100,
            oldest_pending: oldest_age_ms.map(|a| ("dlq_a".to_string(), NOW - a)),
            ingress_last_hour: ingress,
            dominant_code: Some(("UPSTREAM_5XX".into(), ingress)),
            evicted_last_hour: evicted,
        },
        ..Figures::default()
    }
}

#[test]
fn dead_letter_conditions_fire_past_their_thresholds_only() {
    let table: [(Figures, &[&str]); 8] = [
        (dlq(0, None, 0, 0), &[]),
        (dlq(1, Some(60 * MIN), 0, 0), &[]),
        (dlq(1, Some(60 * MIN + 1), 0, 0), &["dlq_oldest:dlq"]),
        (dlq(10, Some(1), 10, 0), &[]),
        (dlq(11, Some(1), 11, 0), &["dlq_ingress:dlq"]),
        (dlq(89, Some(1), 0, 0), &[]),
        (dlq(90, Some(1), 0, 0), &["dlq_capacity:dlq"]),
        (dlq(1, Some(1), 0, 1), &["dlq_capacity:dlq"]),
    ];
    for (figures, want) in table {
        assert_eq!(ids(&figures), want, "{:?}", figures.dlq);
    }
}

#[test]
fn the_detail_carries_what_to_act_on() {
    let c = evaluate(
        &dlq(95, Some(2 * 3_600_000), 40, 3),
        &AlarmConfig::default(),
        NOW,
    );
    let oldest = c
        .iter()
        .find(|c| c.id.kind == AlarmKind::DlqOldest)
        .unwrap();
    assert_eq!(oldest.detail["oldest_id"], "dlq_a");
    assert_eq!(oldest.detail["threshold_ms"], 3_600_000);
    assert_eq!(oldest.detail["dominant_code"]["code"], "UPSTREAM_5XX");
    let cap = c
        .iter()
        .find(|c| c.id.kind == AlarmKind::DlqCapacity)
        .unwrap();
    assert_eq!(
        (
            cap.detail["pending"].as_u64(),
            cap.detail["capacity"].as_u64()
        ),
        (Some(95), Some(100))
    );
    assert_eq!(cap.detail["evicted_last_hour"], 3);
    assert!(c.iter().all(|c| c.detail.is_object()));
}

fn breaker(state: &'static str, left_closed_ago: Option<i64>) -> Figures {
    Figures {
        breakers: vec![BreakerFigure {
            destination: "https://down.example/hook".into(),
            state,
            left_closed_at: left_closed_ago.map(|a| NOW - a),
            cause: Some("UPSTREAM_5XX".into()),
        }],
        ..Figures::default()
    }
}

#[test]
fn a_breaker_alarms_on_time_since_it_was_last_closed_whatever_its_cycles() {
    // A breaker cycling OPEN -> HALF_OPEN -> OPEN keeps its left_closed_at,
    // so HALF_OPEN past the threshold alarms too; CLOSED never does.
    let table = [
        (breaker("CLOSED", None), false),
        (breaker("OPEN", Some(10 * MIN)), false),
        (breaker("OPEN", Some(10 * MIN + 1)), true),
        (breaker("HALF_OPEN", Some(11 * MIN)), true),
    ];
    for (figures, fires) in table {
        let got = ids(&figures);
        assert_eq!(got.len() == 1, fires, "{:?}", figures.breakers);
        if fires {
            assert_eq!(got[0], "breaker_open:https://down.example/hook");
        }
    }
}

#[test]
fn parked_and_silent_and_storage_conditions_have_one_alarm_per_subject() {
    let f = Figures {
        parked: vec![
            ParkedFigure {
                destination: "https://a".into(),
                count: 3,
                oldest: ("evt_1".into(), NOW - 31 * MIN),
            },
            ParkedFigure {
                destination: "https://b".into(),
                count: 1,
                oldest: ("evt_2".into(), NOW - 29 * MIN),
            },
        ],
        sources: vec![
            SourceFigure {
                source: "quiet".into(),
                expect_every_ms: 60 * MIN,
                last_received_at: Some(NOW - 61 * MIN),
                watched_since: 0,
            },
            SourceFigure {
                source: "busy".into(),
                expect_every_ms: 60 * MIN,
                last_received_at: Some(NOW - MIN),
                watched_since: 0,
            },
            SourceFigure {
                source: "never".into(),
                expect_every_ms: 60 * MIN,
                last_received_at: None,
                watched_since: NOW - 2 * 60 * MIN,
            },
            SourceFigure {
                source: "new".into(),
                expect_every_ms: 60 * MIN,
                last_received_at: None,
                watched_since: NOW - MIN,
            },
        ],
        storage: Some(StorageFigure {
            size_bytes: 50,
            cap_bytes: 100,
            effective_window_ms: 10,
            event_retention_ms: 10,
        }),
        ..Figures::default()
    };
    assert_eq!(
        ids(&f),
        [
            "parked_oldest:https://a",
            "source_silent:never",
            "source_silent:quiet"
        ]
    );
}

#[test]
fn storage_fires_near_the_cap_or_when_the_cap_shortened_the_dedupe_window() {
    let s = |size, window| Figures {
        storage: Some(StorageFigure {
            size_bytes: size,
            cap_bytes: 1000,
            effective_window_ms: window,
            event_retention_ms: 100,
        }),
        ..Figures::default()
    };
    let table = [
        (899, 100, false),
        (900, 100, true),
        (10, 99, true),
        (10, 100, false),
    ];
    for (size, window, fires) in table {
        assert_eq!(
            ids(&s(size, window)) == ["storage:d1"],
            fires,
            "{size} {window}"
        );
    }
}

/// DESIGN §5: `detail` carries counts, the dominant code, the destination
/// or source, the oldest id, the threshold; each kind those that apply.
const DESIGN_DETAIL: [(AlarmKind, &[&str]); 8] = [
    (
        AlarmKind::DlqOldest,
        &[
            "pending",
            "dominant_code",
            "oldest_id",
            "oldest_age_ms",
            "threshold_ms",
        ],
    ),
    (
        AlarmKind::DlqIngress,
        &[
            "last_hour",
            "pending",
            "dominant_code",
            "oldest_id",
            "threshold_per_hour",
        ],
    ),
    (
        AlarmKind::DlqCapacity,
        &[
            "pending",
            "capacity",
            "evicted_last_hour",
            "dominant_code",
            "oldest_id",
            "threshold_percent",
        ],
    ),
    (
        AlarmKind::BreakerOpen,
        &[
            "destination",
            "state",
            "cause",
            "not_closed_ms",
            "threshold_ms",
        ],
    ),
    (
        AlarmKind::ParkedOldest,
        &[
            "destination",
            "parked",
            "oldest_event_id",
            "oldest_age_ms",
            "threshold_ms",
        ],
    ),
    (
        AlarmKind::SourceSilent,
        &["source", "last_received_at", "silent_ms", "expect_every_ms"],
    ),
    (
        AlarmKind::SignatureFailures,
        &["source", "last_hour", "threshold_per_hour"],
    ),
    (
        AlarmKind::Storage,
        &[
            "size_bytes",
            "cap_bytes",
            "effective_dedupe_window_ms",
            "event_retention_ms",
            "threshold_percent",
        ],
    ),
];

/// Figures under which every D1-kept kind fires.
fn every_kind_firing() -> Figures {
    let mut f = dlq(95, Some(2 * 3_600_000), 40, 3);
    f.breakers = breaker("OPEN", Some(11 * MIN)).breakers;
    f.parked = vec![ParkedFigure {
        destination: "https://a".into(),
        count: 3,
        oldest: ("evt_1".into(), NOW - 31 * MIN),
    }];
    f.sources = vec![SourceFigure {
        source: "quiet".into(),
        expect_every_ms: 60 * MIN,
        last_received_at: Some(NOW - 61 * MIN),
        watched_since: 0,
    }];
    f.signature_failures = vec![SignatureFailureFigure {
        source: "forged".into(),
        last_hour: 21,
    }];
    f.storage = Some(StorageFigure {
        size_bytes: 950,
        cap_bytes: 1000,
        effective_window_ms: 10,
        event_retention_ms: 10,
    });
    f
}

#[test]
fn every_kind_carries_the_detail_the_design_names() {
    let active = evaluate(&every_kind_firing(), &AlarmConfig::default(), NOW);
    for (kind, keys) in DESIGN_DETAIL {
        let c = active
            .iter()
            .find(|c| c.id.kind == kind)
            .unwrap_or_else(|| panic!("{kind:?} fires"));
        for key in keys {
            assert!(
                !c.detail[*key].is_null(),
                "{kind:?} detail lacks {key}: {}",
                c.detail
            );
        }
    }
}

#[test]
fn signature_failures_fire_above_the_hourly_threshold_per_source() {
    let cfg = AlarmConfig::default();
    let table: [(&str, u64, bool); 4] = [
        ("none", 0, false),
        ("at the threshold", 20, false),
        ("one above", 21, true),
        ("a flood", 5_000, true),
    ];
    for (case, last_hour, fires) in table {
        let f = Figures {
            signature_failures: vec![SignatureFailureFigure {
                source: "acme".into(),
                last_hour,
            }],
            ..Figures::default()
        };
        let ids: Vec<String> = evaluate(&f, &cfg, NOW)
            .iter()
            .map(|c| c.id.to_string())
            .collect();
        assert_eq!(ids == ["signature_failures:acme"], fires, "{case}: {ids:?}");
    }
}

fn pull_due(destination: &str, due: u64, became_due_ago_ms: i64) -> PullDueFigure {
    PullDueFigure {
        destination: destination.into(),
        due,
        oldest: (format!("evt_{destination}"), NOW - became_due_ago_ms),
    }
}

#[test]
fn a_pull_destination_alarms_on_its_oldest_delivery_due_and_unpulled_from_when_it_became_due() {
    // (how long ago the oldest due and unpulled delivery became due) -> fires
    // under the default ALERT_PARKED_OLDEST (30 min), like a parked event.
    let table: [(&str, i64, bool); 5] = [
        ("just due", 0, false),
        ("due 29 min", 29 * MIN, false),
        ("at the threshold", 30 * MIN, false),
        ("one ms past it", 30 * MIN + 1, true),
        ("a consumer gone for hours", 5 * 60 * MIN, true),
    ];
    for (case, ago, fires) in table {
        let f = Figures {
            pull_due: vec![pull_due("inbox", 2, ago)],
            ..Figures::default()
        };
        assert_eq!(ids(&f) == ["parked_oldest:inbox"], fires, "{case}");
    }
}

#[test]
fn a_pull_destinations_alarm_says_it_is_due_and_unpulled_not_parked() {
    let f = Figures {
        pull_due: vec![pull_due("inbox", 3, 31 * MIN)],
        ..Figures::default()
    };
    let c = evaluate(&f, &AlarmConfig::default(), NOW);
    assert_eq!(c.len(), 1);
    let d = &c[0].detail;
    for key in [
        "destination",
        "pull",
        "due_unpulled",
        "oldest_event_id",
        "oldest_due_at",
        "oldest_age_ms",
        "threshold_ms",
    ] {
        assert!(!d[key].is_null(), "detail lacks {key}: {d}");
    }
    assert_eq!(
        (
            d["destination"].as_str(),
            d["due_unpulled"].as_u64(),
            d["oldest_event_id"].as_str(),
            d["oldest_age_ms"].as_i64(),
            d["threshold_ms"].as_i64()
        ),
        (
            Some("inbox"),
            Some(3),
            Some("evt_inbox"),
            Some(31 * MIN),
            Some(30 * MIN)
        )
    );
    assert!(d.get("parked").is_none(), "{d}");
}

#[test]
fn one_alarm_per_destination_whether_parked_or_due_the_older_holds() {
    let parked = |ago: i64| ParkedFigure {
        destination: "both".into(),
        count: 1,
        oldest: ("evt_parked".into(), NOW - ago),
    };
    // (parked this long ago, due this long ago) -> the oldest event named
    let table: [(i64, i64, &str); 3] = [
        (40 * MIN, 35 * MIN, "evt_parked"),
        (35 * MIN, 40 * MIN, "evt_both"),
        (10 * MIN, 40 * MIN, "evt_both"),
    ];
    for (parked_ago, due_ago, want) in table {
        let f = Figures {
            parked: vec![parked(parked_ago)],
            pull_due: vec![pull_due("both", 1, due_ago), pull_due("other", 1, MIN)],
            ..Figures::default()
        };
        let c = evaluate(&f, &AlarmConfig::default(), NOW);
        assert_eq!(
            c.iter().map(|c| c.id.to_string()).collect::<Vec<_>>(),
            ["parked_oldest:both"]
        );
        assert_eq!(
            c[0].detail["oldest_event_id"], want,
            "{parked_ago} {due_ago}"
        );
    }
}
