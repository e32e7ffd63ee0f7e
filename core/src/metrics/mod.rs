//! Counters, in one shape for both places they go: Workers Analytics Engine
//! (the dashboard) and D1's `counters` table (the stats endpoint, locally).
//!
//! An Analytics Engine data point is
//! `index1 = metric`, `blob1 = metric`, `blob2 = component`, `blob3 = source`,
//! `blob4 = code`, `blob5 = detail`, `double1 = count`, so every query groups
//! by the same columns (docs/metrics.md has example SQL). The D1 key is the
//! metric plus its code or detail, e.g. `retry:UPSTREAM_5XX`.

mod names;

pub use names::{Component, MetricName};

use crate::state::error_code::ErrorCode;

/// One counted thing.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Metric {
    /// What is counted.
    pub name: MetricName,
    /// Who counted it.
    pub component: Component,
    /// The webhook source, when there is one.
    pub source: Option<String>,
    /// The error code, for failure counters.
    pub code: Option<ErrorCode>,
    /// Anything else that splits the count (a breaker transition, say).
    pub detail: Option<String>,
}

impl Metric {
    /// A metric with no labels.
    pub fn new(name: MetricName, component: Component) -> Metric {
        Metric {
            name,
            component,
            source: None,
            code: None,
            detail: None,
        }
    }

    /// With a source label.
    pub fn source(mut self, source: &str) -> Metric {
        self.source = Some(source.to_string());
        self
    }

    /// With a code label.
    pub fn code(mut self, code: ErrorCode) -> Metric {
        self.code = Some(code);
        self
    }

    /// With a detail label.
    pub fn detail(mut self, detail: impl Into<String>) -> Metric {
        self.detail = Some(detail.into());
        self
    }

    /// The `counters` row this metric adds to. Sources are not part of the
    /// key, so the table stays small; Analytics Engine keeps them.
    pub fn d1_key(&self) -> String {
        match (&self.code, &self.detail) {
            (Some(code), _) => format!("{}:{}", self.name.as_str(), code.as_str()),
            (None, Some(detail)) => format!("{}:{}", self.name.as_str(), detail),
            (None, None) => self.name.as_str().to_string(),
        }
    }

    /// The five blobs of the Analytics Engine data point, in order.
    pub fn blobs(&self) -> [String; 5] {
        [
            self.name.as_str().to_string(),
            self.component.as_str().to_string(),
            self.source.clone().unwrap_or_default(),
            self.code
                .map(|c| c.as_str().to_string())
                .unwrap_or_default(),
            self.detail.clone().unwrap_or_default(),
        ]
    }
}

/// Increments gathered during one request or batch, merged by metric, in
/// the order first counted. An invocation counts a few dozen distinct
/// metrics at most, so a list searched in order is enough, and it keeps
/// the map code of another key type out of both workers' wasm.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tally(Vec<(Metric, u64)>);

impl Tally {
    /// Adds `by` to `metric`.
    pub fn add(&mut self, metric: Metric, by: u64) {
        if by > 0 {
            add_to(&mut self.0, metric, by);
        }
    }

    /// Every metric with its count.
    pub fn points(&self) -> impl Iterator<Item = (&Metric, u64)> {
        self.0.iter().map(|(m, n)| (m, *n))
    }

    /// Totals per D1 key, for the metrics the flush writes there.
    pub fn d1_totals(&self) -> Vec<(String, u64)> {
        let mut out = Vec::new();
        for (m, n) in self.points().filter(|(m, _)| m.name.flushed_to_d1()) {
            add_to(&mut out, m.d1_key(), n);
        }
        out
    }

    /// Moves everything out, leaving this tally empty.
    pub fn take(&mut self) -> Tally {
        std::mem::take(self)
    }

    /// Whether nothing was counted.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

fn add_to<K: PartialEq>(entries: &mut Vec<(K, u64)>, key: K, by: u64) {
    match entries.iter_mut().find(|(k, _)| *k == key) {
        Some((_, n)) => *n += by,
        None => entries.push((key, by)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Component::{Consumer, Relay};
    use MetricName::{BreakerTransition, Enqueue, Ingest, Retry};

    #[test]
    fn increments_merge_by_metric_and_roll_up_to_d1_keys() {
        let mut t = Tally::default();
        t.add(
            Metric::new(Retry, Consumer)
                .source("a")
                .code(ErrorCode::Upstream5xx),
            2,
        );
        t.add(
            Metric::new(Retry, Consumer)
                .source("b")
                .code(ErrorCode::Upstream5xx),
            1,
        );
        t.add(
            Metric::new(Retry, Consumer)
                .source("a")
                .code(ErrorCode::Upstream5xx),
            1,
        );
        t.add(Metric::new(Ingest, Consumer).source("a"), 3);
        t.add(Metric::new(Ingest, Consumer), 0);
        t.add(Metric::new(BreakerTransition, Consumer).detail("OPEN"), 1);
        assert_eq!(
            t.points().count(),
            4,
            "sources stay apart for Analytics Engine"
        );
        let totals = t.d1_totals();
        assert_eq!(
            totals,
            [
                ("retry:UPSTREAM_5XX".to_string(), 4),
                ("breaker_transition:OPEN".to_string(), 1)
            ],
            "ingest is counted by D1's own trigger, in the ingest's transaction"
        );
    }

    #[test]
    fn what_d1_counts_itself_is_never_flushed_as_well() {
        use MetricName::*;
        let table = [
            (Ingest, false),
            (Duplicate, false),
            (Delivered, false),
            (DeadLettered, false),
            (DlqDeduped, false),
            (Enqueue, false),
            (DeliveryFailed, true),
            (Retry, true),
            (BreakerTransition, true),
        ];
        for (name, flushed) in table {
            assert_eq!(name.flushed_to_d1(), flushed, "{}", name.as_str());
        }
    }

    #[test]
    fn every_data_point_has_the_same_five_blobs() {
        let m = Metric::new(Retry, Consumer)
            .source("demo-stripe")
            .code(ErrorCode::Timeout);
        assert_eq!(
            m.blobs(),
            ["retry", "consumer", "demo-stripe", "TIMEOUT", ""].map(String::from)
        );
        assert_eq!(Metric::new(Enqueue, Relay).blobs()[2], "");
    }

    #[test]
    fn take_empties_the_tally() {
        let mut t = Tally::default();
        t.add(Metric::new(Ingest, Consumer), 1);
        let taken = t.take();
        assert!(t.is_empty());
        assert!(!taken.is_empty());
    }
}
