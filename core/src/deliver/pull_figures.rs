//! The pull destinations' figures (DESIGN §3, "Pull destinations"): per pull
//! destination the deliveries waiting, due, leased and the oldest due age, for
//! the stats, and the oldest delivery due and unpulled, for the `parked_oldest`
//! alarm (counted from when it became due, never from when it arrived).
//!
//! Which destinations pull is the relay's configuration (`DESTINATIONS`),
//! which the DLQ worker does not hold: the stats ask the relay for these
//! figures through `RELAY` ([`PATH`]), and the relay answers one line per
//! configured pull destination, so one nobody has pulled yet (or with nothing
//! waiting) shows its zeros, never an absence. D1 cannot tell a pull
//! destination's waiting row from a URL destination's pending one, so no
//! D1-only read could. No clock is read here: `now` comes in.

use crate::UnixMillis;
use serde::{Deserialize, Serialize};

/// The relay's internal route that answers the figures to the DLQ worker's
/// stats (a token-proven call, like a replay's).
pub const PATH: &str = "/internal/v1/pull-figures";

/// How long the stats wait for the relay's figures (one D1 batch there)
/// before they answer without them, naming the wait: a hung relay must
/// never hang the page on-call reads first.
pub const ANSWER_WITHIN_MS: u64 = 5_000;

/// What D1 holds for one pull destination's waiting deliveries (pending,
/// not handed to the DLQ).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WaitingRead {
    /// The destination.
    pub destination: String,
    /// Its waiting deliveries.
    pub waiting: u64,
    /// Of those, the ones due at the read's `now`.
    pub due: u64,
    /// The earliest time one of them is (or was) due, and that delivery's
    /// event id.
    pub earliest: Option<(String, UnixMillis)>,
}

/// One pull destination's line in the stats.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PullFigure {
    /// The destination's name.
    pub destination: String,
    /// Deliveries waiting to be pulled (pending, not handed to the DLQ),
    /// due or not yet (a retry's delay).
    pub waiting: u64,
    /// Of those, the ones due now.
    pub due: u64,
    /// Deliveries leased to a consumer (`delivering`), awaiting its ack.
    pub leased: u64,
    /// How long the oldest due and unpulled delivery has been due, in
    /// seconds (none: nothing is due).
    pub oldest_due_age_s: Option<i64>,
}

/// The relay's answer to [`PATH`]: one line per configured pull
/// destination, by name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PullFigures {
    /// The lines.
    pub destinations: Vec<PullFigure>,
}

/// When the oldest of `read`'s waiting deliveries became due, with its
/// event id, if it is due at `now_ms` (none: nothing waiting is due yet).
pub fn oldest_due(read: &WaitingRead, now_ms: UnixMillis) -> Option<(String, UnixMillis)> {
    read.earliest.clone().filter(|(_, at)| *at <= now_ms)
}

/// One line per name of `pulls` (the configured pull destinations), sorted
/// by name, from what D1 holds: `waiting` (per destination) and `leased`
/// (per destination, its `delivering` rows). A destination D1 holds nothing
/// for has zeros; a read naming a destination no longer configured as pull
/// is left out.
pub fn figures(
    pulls: &[String],
    waiting: &[WaitingRead],
    leased: &[(String, u64)],
    now_ms: UnixMillis,
) -> PullFigures {
    let mut destinations: Vec<PullFigure> = pulls
        .iter()
        .map(|name| {
            let w = waiting.iter().find(|w| &w.destination == name);
            let oldest = w.and_then(|w| oldest_due(w, now_ms));
            PullFigure {
                destination: name.clone(),
                waiting: w.map_or(0, |w| w.waiting),
                due: w.map_or(0, |w| w.due),
                leased: leased
                    .iter()
                    .find(|(d, _)| d == name)
                    .map_or(0, |(_, n)| *n),
                oldest_due_age_s: oldest.map(|(_, at)| (now_ms - at).max(0) / 1000),
            }
        })
        .collect();
    crate::support::small_sort::sort_by(&mut destinations, |a, b| {
        a.destination.cmp(&b.destination)
    });
    PullFigures { destinations }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: UnixMillis = 1_800_000_000_000;

    fn read(destination: &str, waiting: u64, due: u64, earliest_ago_ms: i64) -> WaitingRead {
        WaitingRead {
            destination: destination.into(),
            waiting,
            due,
            earliest: Some((format!("evt_{destination}"), NOW - earliest_ago_ms)),
        }
    }

    #[test]
    fn each_pull_destination_is_one_line_with_zeros_when_nothing_is_stored() {
        let pulls = ["outbox".to_string(), "inbox".into(), "never-pulled".into()];
        let got = figures(
            &pulls,
            &[read("inbox", 3, 2, 90_500), read("gone", 9, 9, 1)],
            &[("outbox".into(), 4), ("gone".into(), 1)],
            NOW,
        );
        let want = [
            ("inbox", 3, 2, 0, Some(90)),
            ("never-pulled", 0, 0, 0, None),
            ("outbox", 0, 0, 4, None),
        ];
        assert_eq!(got.destinations.len(), want.len());
        for (line, (name, waiting, due, leased, age)) in got.destinations.iter().zip(want) {
            assert_eq!(
                (
                    line.destination.as_str(),
                    line.waiting,
                    line.due,
                    line.leased,
                    line.oldest_due_age_s
                ),
                (name, waiting, due, leased, age)
            );
        }
    }

    #[test]
    fn the_oldest_due_age_counts_from_when_it_became_due_and_only_once_due() {
        // (ms since the earliest became due; negative: due in the future) -> age
        let table: [(i64, Option<i64>); 4] = [
            (-30_000, None),
            (0, Some(0)),
            (1_999, Some(1)),
            (3_600_000, Some(3_600)),
        ];
        for (ago, want) in table {
            let got = figures(&["p".into()], &[read("p", 1, 1, ago)], &[], NOW);
            assert_eq!(got.destinations[0].oldest_due_age_s, want, "{ago}");
            assert_eq!(
                oldest_due(&read("p", 1, 1, ago), NOW).map(|(_, at)| at),
                want.map(|_| NOW - ago),
                "{ago}"
            );
        }
        let none = WaitingRead {
            earliest: None,
            ..read("p", 0, 0, 0)
        };
        assert_eq!(oldest_due(&none, NOW), None);
    }

    #[test]
    fn the_answer_reads_back_as_it_was_written() {
        let answer = figures(&["p".into()], &[read("p", 2, 1, 5_000)], &[], NOW);
        let text = serde_json::to_string(&answer).unwrap();
        assert_eq!(
            text,
            r#"{"destinations":[{"destination":"p","waiting":2,"due":1,"leased":0,"oldest_due_age_s":5}]}"#
        );
        assert_eq!(serde_json::from_str::<PullFigures>(&text).unwrap(), answer);
    }
}
