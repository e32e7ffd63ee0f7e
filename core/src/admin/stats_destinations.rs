//! The stats' `destinations`: one line per destination name (DESIGN §4),
//! joined from what D1 holds per destination (its breaker, its parked
//! deliveries, its last hour of outcomes), so a destination known to any
//! of them is listed once, by name.

use serde::Serialize;

/// A destination's breaker as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BreakerFigure {
    /// CLOSED, OPEN or HALF_OPEN.
    pub state: String,
    /// Its last change (unix ms).
    pub since: i64,
}

/// A destination's parked deliveries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ParkedFigure {
    /// How many.
    pub count: i64,
    /// The oldest one's age in seconds, as of the answer.
    pub oldest_age_s: Option<i64>,
}

/// A destination's deliveries whose last change fell in the last hour.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct LastHourFigure {
    /// All of them.
    pub total: i64,
    /// Delivered.
    pub delivered: i64,
    /// Dead-lettered.
    pub dead_lettered: i64,
}

/// One destination's line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DestinationFigures {
    /// The destination's name.
    pub destination: String,
    /// Its breaker, if it has a row (none: never failed, so CLOSED).
    pub breaker: Option<BreakerFigure>,
    /// Its parked deliveries.
    pub parked: ParkedFigure,
    /// Its last hour.
    pub deliveries_last_hour: LastHourFigure,
}

/// Joins the per-destination reads by name, sorted by name. A parked
/// oldest time becomes an age as of `now_ms`.
pub fn join(
    breakers: Vec<(String, BreakerFigure)>,
    parked: Vec<(String, i64, Option<i64>)>,
    last_hour: Vec<(String, LastHourFigure)>,
    now_ms: i64,
) -> Vec<DestinationFigures> {
    let mut out: Vec<DestinationFigures> = Vec::new();
    let mut line = |name: String| -> usize {
        match out.iter().position(|d| d.destination == name) {
            Some(i) => i,
            None => {
                out.push(DestinationFigures {
                    destination: name,
                    breaker: None,
                    parked: ParkedFigure {
                        count: 0,
                        oldest_age_s: None,
                    },
                    deliveries_last_hour: LastHourFigure::default(),
                });
                out.len() - 1
            }
        }
    };
    let mut breaker_at = Vec::new();
    for (name, b) in breakers {
        breaker_at.push((line(name), b));
    }
    let mut parked_at = Vec::new();
    for (name, count, oldest) in parked {
        let oldest_age_s = oldest.map(|t| (now_ms - t).max(0) / 1000);
        parked_at.push((
            line(name),
            ParkedFigure {
                count,
                oldest_age_s,
            },
        ));
    }
    let mut hour_at = Vec::new();
    for (name, h) in last_hour {
        hour_at.push((line(name), h));
    }
    for (i, b) in breaker_at {
        out[i].breaker = Some(b);
    }
    for (i, p) in parked_at {
        out[i].parked = p;
    }
    for (i, h) in hour_at {
        out[i].deliveries_last_hour = h;
    }
    crate::support::small_sort::sort_by(&mut out, |a, b| a.destination.cmp(&b.destination));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_destination_is_one_line_whatever_knows_it() {
        let open = BreakerFigure {
            state: "OPEN".into(),
            since: 5,
        };
        let hour = LastHourFigure {
            total: 3,
            delivered: 2,
            dead_lettered: 1,
        };
        let got = join(
            vec![("billing".into(), open.clone())],
            vec![("billing".into(), 4, Some(1_000)), ("shop".into(), 1, None)],
            vec![("analytics".into(), hour), ("billing".into(), hour)],
            11_000,
        );
        let names: Vec<&str> = got.iter().map(|d| d.destination.as_str()).collect();
        assert_eq!(names, ["analytics", "billing", "shop"]);
        assert_eq!(got[1].breaker, Some(open));
        assert_eq!(
            got[1].parked,
            ParkedFigure {
                count: 4,
                oldest_age_s: Some(10)
            }
        );
        assert_eq!(got[1].deliveries_last_hour, hour);
        assert_eq!((got[0].breaker.clone(), got[0].parked.count), (None, 0));
        assert_eq!(got[2].deliveries_last_hour, LastHourFigure::default());
    }
}
