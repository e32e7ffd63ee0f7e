//! A batch's calls in waves behind one breaker read: the threshold holds as one call at a time would.

use super::*;
use crate::state::error_code::ErrorCode::{Timeout, Upstream5xx};

const CFG: BreakerConfig = BreakerConfig {
    failure_threshold: 5,
    success_threshold: 1,
    cooldown_ms: 60_000,
};
const NOW: UnixMillis = 1_000_000;
const OK: Option<ErrorCode> = None;
const BAD: Option<ErrorCode> = Some(Upstream5xx);

fn closed(failures: u32) -> BreakerState {
    BreakerState::Closed { failures }
}

fn open(at: UnixMillis) -> BreakerState {
    BreakerState::Open {
        opened_at_ms: at,
        cause: Some(Timeout),
    }
}

/// Runs every wave, answering each call with `answer(index)`, and returns
/// the waves as planned (probes claimed at once).
fn run(
    state: BreakerState,
    n: usize,
    cfg: &BreakerConfig,
    answer: impl Fn(usize) -> Option<ErrorCode>,
) -> (Vec<Wave>, DestinationWaves) {
    let mut w = DestinationWaves::new(state, (0..n).collect());
    let mut waves = Vec::new();
    loop {
        let wave = w.next(NOW, cfg);
        match &wave {
            Wave::Done => break,
            Wave::Call(ix) => {
                let results: Vec<_> = ix.iter().map(|&i| answer(i)).collect();
                w.fold(&results, NOW, cfg);
            }
            Wave::Probe { index, next } => {
                w.probe_claimed(*next);
                w.fold(&[answer(*index)], NOW, cfg);
            }
            Wave::Refuse { .. } => {}
        }
        waves.push(wave);
    }
    (waves, w)
}

fn calls(v: &[usize]) -> Wave {
    Wave::Call(v.to_vec())
}

#[test]
fn a_healthy_destination_is_tried_with_the_threshold_then_gets_the_rest_at_once() {
    let (waves, w) = run(closed(0), 12, &CFG, |_| OK);
    assert_eq!(
        waves,
        vec![calls(&[0, 1, 2, 3, 4]), calls(&[5, 6, 7, 8, 9, 10, 11])]
    );
    assert_eq!(w.to_write(), None, "a healthy batch costs no breaker write");
    let (waves, _) = run(closed(0), 250, &CFG, |_| OK);
    let widths: Vec<usize> = waves
        .iter()
        .map(|w| match w {
            Wave::Call(ix) => ix.len(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(widths, vec![5, MAX_WAVE, MAX_WAVE, 45]);
}

#[test]
fn a_destination_failing_after_a_healthy_wave_costs_at_most_one_wide_wave_then_narrows() {
    // Healthy for the first wave only: the wide wave fails whole and opens it.
    let (waves, w) = run(closed(0), 30, &CFG, |i| if i < 5 { OK } else { BAD });
    assert_eq!(waves[0], calls(&[0, 1, 2, 3, 4]));
    assert_eq!(waves[1], Wave::Call((5..30).collect()));
    assert_eq!(waves.len(), 2);
    assert!(matches!(w.state(), BreakerState::Open { .. }));
    // A failure at the end of a wave narrows the next one to the failures left.
    let mut w = DestinationWaves::new(closed(0), (0..10).collect());
    let _ = w.next(NOW, &CFG);
    w.fold(&[OK, OK, OK, OK, BAD], NOW, &CFG);
    assert_eq!(w.next(NOW, &CFG), calls(&[5, 6, 7, 8]));
}

#[test]
fn a_wave_is_never_wider_than_the_failures_left_before_the_threshold() {
    let table = [(0, 5), (1, 4), (3, 2), (4, 1)];
    for (failures, width) in table {
        let mut w = DestinationWaves::new(closed(failures), (0..10).collect());
        match w.next(NOW, &CFG) {
            Wave::Call(ix) => assert_eq!(ix.len(), width, "failures {failures}"),
            other => panic!("failures {failures}: {other:?}"),
        }
    }
    let wide = BreakerConfig {
        failure_threshold: 1000,
        ..CFG
    };
    let mut w = DestinationWaves::new(closed(0), (0..200).collect());
    assert_eq!(w.next(NOW, &wide), Wave::Call((0..MAX_WAVE).collect()));
}

#[test]
fn a_destination_that_fails_everything_gets_exactly_threshold_calls_then_the_rest_are_refused() {
    let (waves, w) = run(closed(0), 9, &CFG, |_| BAD);
    assert_eq!(waves[0], calls(&[0, 1, 2, 3, 4]));
    assert_eq!(
        waves[1],
        Wave::Refuse {
            indexes: vec![5, 6, 7, 8],
            retry_at_ms: NOW + CFG.cooldown_ms,
            cause: Some(Upstream5xx),
        }
    );
    assert_eq!(waves.len(), 2);
    assert_eq!(
        w.to_write(),
        Some(BreakerState::Open {
            opened_at_ms: NOW,
            cause: Some(Upstream5xx)
        })
    );
}

#[test]
fn consecutive_failures_are_counted_in_call_order() {
    // F F S F F: the success in the middle resets the count, so two remain.
    let pattern = [BAD, BAD, OK, BAD, BAD];
    let mut w = DestinationWaves::new(closed(0), (0..8).collect());
    assert_eq!(w.next(NOW, &CFG), calls(&[0, 1, 2, 3, 4]));
    w.fold(&pattern, NOW, &CFG);
    assert_eq!(w.state(), closed(2));
    assert_eq!(w.next(NOW, &CFG), calls(&[5, 6, 7]));
}

#[test]
fn an_open_breaker_refuses_every_call_until_its_cooldown() {
    let (waves, w) = run(open(NOW - 1_000), 3, &CFG, |_| OK);
    assert_eq!(
        waves,
        vec![Wave::Refuse {
            indexes: vec![0, 1, 2],
            retry_at_ms: NOW - 1_000 + CFG.cooldown_ms,
            cause: Some(Timeout),
        }]
    );
    assert_eq!(w.to_write(), None);
}

#[test]
fn after_the_cooldown_one_probe_goes_alone_and_its_success_releases_the_rest() {
    let (waves, w) = run(open(NOW - 60_000), 7, &CFG, |_| OK);
    let probe = BreakerState::HalfOpen {
        successes: 0,
        probe_started_at_ms: Some(NOW),
        cause: Some(Timeout),
    };
    let probe = Wave::Probe {
        index: 0,
        next: probe,
    };
    // A lone probe is no proof: the threshold's wave comes first.
    assert_eq!(waves, vec![probe, calls(&[1, 2, 3, 4, 5]), calls(&[6])]);
    assert_eq!(w.to_write(), Some(closed(0)));
}

#[test]
fn a_failed_probe_reopens_it_and_the_rest_of_the_batch_is_refused() {
    let (waves, w) = run(open(NOW - 60_000), 4, &CFG, |_| BAD);
    assert!(matches!(waves[0], Wave::Probe { index: 0, .. }));
    assert_eq!(
        waves[1],
        Wave::Refuse {
            indexes: vec![1, 2, 3],
            retry_at_ms: NOW + CFG.cooldown_ms,
            cause: Some(Upstream5xx),
        }
    );
    assert_eq!(
        w.state(),
        BreakerState::Open {
            opened_at_ms: NOW,
            cause: Some(Upstream5xx)
        }
    );
}

#[test]
fn a_success_threshold_above_one_takes_one_probe_at_a_time() {
    let cfg = BreakerConfig {
        success_threshold: 2,
        ..CFG
    };
    let (waves, _) = run(open(NOW - 60_000), 4, &cfg, |_| OK);
    assert!(matches!(waves[0], Wave::Probe { index: 0, .. }));
    assert!(matches!(waves[1], Wave::Probe { index: 1, .. }));
    assert_eq!(waves[2], calls(&[2, 3]));
}

#[test]
fn a_probe_in_flight_elsewhere_refuses_the_batch() {
    let probing = BreakerState::HalfOpen {
        successes: 0,
        probe_started_at_ms: Some(NOW - 10),
        cause: None,
    };
    let (waves, _) = run(probing, 2, &CFG, |_| OK);
    assert!(matches!(&waves[..], [Wave::Refuse { indexes, .. }] if indexes == &vec![0, 1]));
}

#[test]
fn a_lost_probe_claim_reloads_and_gives_the_probe_back() {
    let mut w = DestinationWaves::new(open(NOW - 60_000), vec![3, 4]);
    let Wave::Probe { index, .. } = w.next(NOW, &CFG) else {
        panic!("a probe is due")
    };
    let other = BreakerState::HalfOpen {
        successes: 0,
        probe_started_at_ms: Some(NOW),
        cause: None,
    };
    w.reloaded(other, Some(index), NOW, &CFG);
    assert!(matches!(w.next(NOW, &CFG), Wave::Refuse { indexes, .. } if indexes == vec![3, 4]));
}

#[test]
fn a_lost_final_write_folds_the_batch_again_onto_the_newer_state() {
    let mut w = DestinationWaves::new(closed(0), (0..3).collect());
    let _ = w.next(NOW, &CFG);
    w.fold(&[BAD, BAD, BAD], NOW, &CFG);
    assert_eq!(w.to_write(), Some(closed(3)));
    // Another isolate counted two failures meanwhile: together they open it.
    w.reloaded(closed(2), None, NOW, &CFG);
    assert_eq!(
        w.to_write(),
        Some(BreakerState::Open {
            opened_at_ms: NOW,
            cause: Some(Upstream5xx)
        })
    );
    w.written();
    assert_eq!(w.to_write(), None);
}
