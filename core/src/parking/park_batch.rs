//! The drains a batch's parks call for: one per destination, due at the
//! earliest probe time any of its parks saw.

use crate::state::error_code::ErrorCode;
use crate::UnixMillis;

/// One destination's drain to make sure of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DrainToEnsure<'a> {
    /// The destination URL.
    pub destination: &'a str,
    /// When its first step may run: the earliest probe time any of its
    /// parks saw, or now when none saw one (it parked behind a drain).
    pub first_step_at_ms: UnixMillis,
    /// The first cause any of its parks knew.
    pub cause: Option<ErrorCode>,
}

/// Merges a batch's parks, `(destination, probe_at_ms, cause)` each, into
/// one drain per destination, in the order each destination first parked.
/// A batch parks for a handful of destinations: a list will do.
pub fn drains_to_ensure<'a>(
    parks: impl IntoIterator<Item = (&'a str, Option<UnixMillis>, Option<ErrorCode>)>,
    now_ms: UnixMillis,
) -> Vec<DrainToEnsure<'a>> {
    let mut merged: Vec<(&str, Option<UnixMillis>, Option<ErrorCode>)> = Vec::new();
    for (destination, probe_at_ms, cause) in parks {
        match merged.iter_mut().find(|(d, ..)| *d == destination) {
            Some((_, probe, known)) => {
                *probe = match (*probe, probe_at_ms) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
                *known = known.or(cause);
            }
            None => merged.push((destination, probe_at_ms, cause)),
        }
    }
    merged
        .into_iter()
        .map(|(destination, probe, cause)| DrainToEnsure {
            destination,
            first_step_at_ms: probe.unwrap_or(now_ms),
            cause,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ErrorCode::{Timeout, Upstream5xx};

    const NOW: UnixMillis = 1_000;

    #[test]
    fn parks_merge_into_one_drain_per_destination_at_the_earliest_probe() {
        type Park = (&'static str, Option<UnixMillis>, Option<ErrorCode>);
        type Want = (&'static str, UnixMillis, Option<ErrorCode>);
        let table: [(&[Park], &[Want]); 6] = [
            (&[], &[]),
            (
                &[("a", Some(5_000), Some(Upstream5xx))],
                &[("a", 5_000, Some(Upstream5xx))],
            ),
            // Behind a running drain no probe time is known: due now.
            (&[("a", None, None)], &[("a", NOW, None)]),
            // The earliest probe wins; a known time beats an unknown one.
            (
                &[
                    ("a", Some(9_000), None),
                    ("a", None, None),
                    ("a", Some(7_000), None),
                ],
                &[("a", 7_000, None)],
            ),
            // The first known cause is kept.
            (
                &[
                    ("a", None, None),
                    ("a", None, Some(Timeout)),
                    ("a", None, Some(Upstream5xx)),
                ],
                &[("a", NOW, Some(Timeout))],
            ),
            // Destinations stay apart, in the order they first parked.
            (
                &[
                    ("b", Some(3_000), None),
                    ("a", None, Some(Timeout)),
                    ("b", Some(2_000), None),
                ],
                &[("b", 2_000, None), ("a", NOW, Some(Timeout))],
            ),
        ];
        for (parks, want) in table {
            let got: Vec<Want> = drains_to_ensure(parks.iter().copied(), NOW)
                .into_iter()
                .map(|d| (d.destination, d.first_step_at_ms, d.cause))
                .collect();
            assert_eq!(got, want, "{parks:?}");
        }
    }
}
