//! The stats' `destinations`: one line per destination name (DESIGN §4),
//! joined from what D1 holds per destination (its breaker, its rate as its
//! last reservation made it, its parked deliveries, its last hour of
//! outcomes), so a destination known to any of them is listed once, by
//! name.

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
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DestinationFigures {
    /// The destination's name.
    pub destination: String,
    /// Its breaker, if it has a row (none: never failed, so CLOSED).
    pub breaker: Option<BreakerFigure>,
    /// Its `rate_per_s`, once a call reserved a start at it (none: no rate,
    /// or no call since the relay was given one).
    pub rate_per_s: Option<f64>,
    /// Its parked deliveries.
    pub parked: ParkedFigure,
    /// Its last hour.
    pub deliveries_last_hour: LastHourFigure,
}

/// What D1 holds per destination, each read keyed by its name.
pub struct PerDestination {
    /// The breakers.
    pub breakers: Vec<(String, BreakerFigure)>,
    /// The rates (`rates.rate_per_s`).
    pub rates: Vec<(String, f64)>,
    /// The parked deliveries: count and oldest parked time.
    pub parked: Vec<(String, i64, Option<i64>)>,
    /// The last hour's outcomes.
    pub last_hour: Vec<(String, LastHourFigure)>,
}

/// Joins the per-destination reads by name, sorted by name. A parked
/// oldest time becomes an age as of `now_ms`.
pub fn join(reads: PerDestination, now_ms: i64) -> Vec<DestinationFigures> {
    let PerDestination {
        breakers,
        rates,
        parked,
        last_hour,
    } = reads;
    let mut out: Vec<DestinationFigures> = Vec::new();
    let mut line = |name: String| -> usize {
        match out.iter().position(|d| d.destination == name) {
            Some(i) => i,
            None => {
                out.push(DestinationFigures {
                    destination: name,
                    breaker: None,
                    rate_per_s: None,
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
    let rate_at: Vec<(usize, f64)> = rates.into_iter().map(|(n, r)| (line(n), r)).collect();
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
    for (i, r) in rate_at {
        out[i].rate_per_s = Some(r);
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
            PerDestination {
                breakers: vec![("billing".into(), open.clone())],
                rates: vec![("billing".into(), 2.5), ("crm".into(), 0.1)],
                parked: vec![("billing".into(), 4, Some(1_000)), ("shop".into(), 1, None)],
                last_hour: vec![("analytics".into(), hour), ("billing".into(), hour)],
            },
            11_000,
        );
        let names: Vec<&str> = got.iter().map(|d| d.destination.as_str()).collect();
        assert_eq!(names, ["analytics", "billing", "crm", "shop"]);
        let rates: Vec<Option<f64>> = got.iter().map(|d| d.rate_per_s).collect();
        assert_eq!(rates, [None, Some(2.5), Some(0.1), None]);
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
        assert_eq!(got[3].deliveries_last_hour, LastHourFigure::default());
    }
}
