//! The breaker's state machine, table by table.

use super::*;

const CFG: BreakerConfig = BreakerConfig {
    failure_threshold: 5,
    success_threshold: 1,
    cooldown_ms: 60_000,
};

fn closed(failures: u32) -> BreakerState {
    BreakerState::Closed { failures }
}

#[test]
fn a_closed_breaker_opens_after_the_threshold_of_consecutive_failures() {
    let mut s = BreakerState::default();
    for n in 1..=4 {
        s = record(s, Some(ErrorCode::Upstream5xx), 1000, &CFG);
        assert_eq!(s, closed(n));
        assert_eq!(admit(s, 1000, &CFG), Admission::Allow);
    }
    s = record(s, Some(ErrorCode::Upstream5xx), 1000, &CFG);
    assert_eq!(
        s,
        BreakerState::Open {
            opened_at_ms: 1000,
            cause: Some(ErrorCode::Upstream5xx),
        },
        "the failure that opened it is kept"
    );
}

#[test]
fn a_refused_credential_or_a_redirect_opens_a_closed_breaker_at_once() {
    for code in [ErrorCode::AuthExpired, ErrorCode::UpstreamRedirect] {
        let cause = Some(code);
        let open = BreakerState::Open {
            opened_at_ms: 7,
            cause,
        };
        for from in [closed(0), closed(3)] {
            assert_eq!(record(from, cause, 7, &CFG), open, "{code} {from:?}");
        }
        let probing = BreakerState::HalfOpen {
            successes: 0,
            probe_started_at_ms: Some(1),
            cause,
        };
        assert_eq!(
            record(probing, cause, 7, &CFG),
            open,
            "a failed probe reopens"
        );
        assert!(opens_at_once(code), "{code}");
    }
    for code in [
        ErrorCode::Upstream5xx,
        ErrorCode::Timeout,
        ErrorCode::RateLimited,
    ] {
        assert!(!opens_at_once(code), "{code}");
        assert_eq!(record(closed(0), Some(code), 7, &CFG), closed(1));
    }
}

#[test]
fn a_success_resets_the_failure_count() {
    let s = record(closed(4), None, 0, &CFG);
    assert_eq!(s, closed(0));
    assert_eq!(record(s, Some(ErrorCode::Upstream5xx), 0, &CFG), closed(1));
}

#[test]
fn an_open_breaker_rejects_until_the_cooldown_then_admits_one_probe() {
    let open = BreakerState::Open {
        opened_at_ms: 10_000,
        cause: None,
    };
    assert_eq!(
        admit(open, 10_000, &CFG),
        Admission::Reject {
            retry_at_ms: 70_000,
            cause: None,
        }
    );
    assert_eq!(
        admit(open, 69_999, &CFG),
        Admission::Reject {
            retry_at_ms: 70_000,
            cause: None,
        }
    );
    let probe = admit(open, 70_000, &CFG);
    let Admission::Probe { next } = probe else {
        panic!("{probe:?}")
    };
    assert_eq!(
        next,
        BreakerState::HalfOpen {
            successes: 0,
            probe_started_at_ms: Some(70_000),
            cause: None
        }
    );
    assert_eq!(next.name(), "HALF_OPEN");
    assert_eq!(
        admit(next, 70_001, &CFG),
        Admission::Reject {
            retry_at_ms: 130_000,
            cause: None,
        },
        "only one probe in flight"
    );
}

#[test]
fn a_successful_probe_closes_and_a_failed_probe_reopens() {
    let half = BreakerState::HalfOpen {
        successes: 0,
        probe_started_at_ms: Some(70_000),
        cause: None,
    };
    assert_eq!(record(half, None, 70_500, &CFG), closed(0));
    assert_eq!(
        record(half, Some(ErrorCode::Timeout), 70_500, &CFG),
        BreakerState::Open {
            opened_at_ms: 70_500,
            cause: Some(ErrorCode::Timeout),
        }
    );
}

#[test]
fn with_a_success_threshold_of_two_each_successful_probe_admits_the_next() {
    let cfg = BreakerConfig {
        success_threshold: 2,
        ..CFG
    };
    let half = BreakerState::HalfOpen {
        successes: 0,
        probe_started_at_ms: Some(0),
        cause: None,
    };
    let after_one = record(half, None, 1, &cfg);
    assert_eq!(
        after_one,
        BreakerState::HalfOpen {
            successes: 1,
            probe_started_at_ms: None,
            cause: None
        }
    );
    assert!(matches!(admit(after_one, 2, &cfg), Admission::Probe { .. }));
    assert_eq!(record(after_one, None, 3, &cfg), closed(0));
}

#[test]
fn a_probe_that_never_reports_back_is_replaced_after_a_cooldown() {
    let stuck = BreakerState::HalfOpen {
        successes: 0,
        probe_started_at_ms: Some(0),
        cause: None,
    };
    assert!(matches!(
        admit(stuck, 59_999, &CFG),
        Admission::Reject { .. }
    ));
    assert!(matches!(
        admit(stuck, 60_000, &CFG),
        Admission::Probe { .. }
    ));
}

#[test]
fn a_late_result_does_not_change_an_open_breaker() {
    let open = BreakerState::Open {
        opened_at_ms: 5,
        cause: None,
    };
    assert_eq!(record(open, None, 6, &CFG), open);
    assert_eq!(record(open, Some(ErrorCode::Upstream5xx), 6, &CFG), open);
}

#[test]
fn states_serialize_with_their_names() {
    let json = serde_json::to_string(&BreakerState::Open {
        opened_at_ms: 1,
        cause: None,
    })
    .unwrap();
    assert_eq!(json, r#"{"state":"OPEN","opened_at_ms":1}"#);
    let back: BreakerState = serde_json::from_str(&json).unwrap();
    assert_eq!(
        back,
        BreakerState::Open {
            opened_at_ms: 1,
            cause: None
        }
    );
}

#[test]
fn a_refused_call_says_when_the_next_probe_is_due() {
    let table = [
        (61_000, 1_000, "60s"),
        (1_500, 1_000, "1s"),
        (500, 1_000, "0s"),
    ];
    for (retry_at, now, want) in table {
        let f = circuit_open_failure("https://x.example", retry_at, now, Some(ErrorCode::Timeout));
        assert_eq!(f.cause, Some(ErrorCode::Timeout));
        assert_eq!(f.code, ErrorCode::CircuitOpen);
        assert!(f.message.contains(want), "{}", f.message);
        assert!(f.message.contains("no call made"));
    }
}

#[test]
fn a_probing_breaker_keeps_the_cause_that_opened_it() {
    let open = BreakerState::Open {
        opened_at_ms: 0,
        cause: Some(ErrorCode::Timeout),
    };
    let Admission::Probe { next } = admit(open, 60_000, &CFG) else {
        panic!("the cooldown passed")
    };
    assert_eq!(next.cause(), Some(ErrorCode::Timeout));
    assert_eq!(
        admit(next, 60_001, &CFG),
        Admission::Reject {
            retry_at_ms: 120_000,
            cause: Some(ErrorCode::Timeout),
        },
        "a call refused while the probe is out still names the cause"
    );
    let cfg = BreakerConfig {
        success_threshold: 2,
        ..CFG
    };
    assert_eq!(
        record(next, None, 60_002, &cfg).cause(),
        Some(ErrorCode::Timeout)
    );
    assert_eq!(record(next, None, 60_002, &CFG).cause(), None, "closed");
}

#[test]
fn a_forced_open_waits_for_the_longer_of_the_cooldown_and_retry_after() {
    let table = [
        (None, 160_000),
        (Some(10), 160_000),
        (Some(60), 160_000),
        (Some(90), 190_000),
    ];
    for (retry_after, probe_at) in table {
        let s = force_open(ErrorCode::RateLimited, retry_after, 100_000, &CFG);
        assert_eq!(s.cause(), Some(ErrorCode::RateLimited));
        assert_eq!(next_probe_at(s, &CFG), Some(probe_at), "{retry_after:?}");
        assert!(matches!(
            admit(s, probe_at - 1, &CFG),
            Admission::Reject { .. }
        ));
        assert!(matches!(admit(s, probe_at, &CFG), Admission::Probe { .. }));
    }
    assert_eq!(next_probe_at(closed(0), &CFG), None);
}

#[test]
fn the_open_action_parses_and_defaults_to_park() {
    assert_eq!(BreakerOpenAction::default(), BreakerOpenAction::Park);
    let table = [
        ("park", Some(BreakerOpenAction::Park)),
        ("retry", Some(BreakerOpenAction::Retry)),
        (" dead-letter ", Some(BreakerOpenAction::DeadLetter)),
        ("drop", None),
        ("Park", None),
    ];
    for (raw, want) in table {
        assert_eq!(BreakerOpenAction::parse(raw), want, "{raw}");
    }
}

#[test]
fn an_unreadable_breaker_fails_open() {
    assert_eq!(ADMISSION_WHEN_UNREADABLE, Admission::Allow);
    let cfg = BreakerConfig::default();
    assert_eq!(
        admit(STATE_WHEN_UNREADABLE, 0, &cfg),
        ADMISSION_WHEN_UNREADABLE
    );
}
