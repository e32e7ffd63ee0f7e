//! When a job stops itself: once enough entries were attempted and the
//! failure ratio is above the accepted baseline ("abort when the original
//! failure class returns above its accepted baseline").

use super::request::AbortSpec;

/// The abort reason, if the job must stop now.
pub fn evaluate(attempted: u64, failed: u64, spec: &AbortSpec) -> Option<String> {
    if attempted == 0 || attempted < u64::from(spec.min_attempts) {
        return None;
    }
    let ratio = failed as f64 / attempted as f64;
    (ratio > spec.max_failure_ratio).then(|| {
        format!(
            "{failed} of {attempted} attempted entries failed ({}%), above the accepted {}% (abort.max_failure_ratio); fix the cause, then create a new job",
            // Whole percents as integers: float formatting would add
            // kilobytes to the wasm for a log-level detail.
            (ratio * 100.0).round() as u64,
            (spec.max_failure_ratio * 100.0).round() as u64
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_threshold_at_its_edges() {
        let spec = AbortSpec {
            max_failure_ratio: 0.2,
            min_attempts: 10,
        };
        let table = [
            (0, 0, false),
            (9, 9, false),  // below min_attempts, however bad
            (10, 2, false), // exactly the ratio is accepted
            (10, 3, true),
            (100, 20, false),
            (100, 21, true),
        ];
        for (attempted, failed, stops) in table {
            assert_eq!(
                evaluate(attempted, failed, &spec).is_some(),
                stops,
                "{failed}/{attempted}"
            );
        }
        let strict = AbortSpec {
            max_failure_ratio: 0.0,
            min_attempts: 1,
        };
        assert!(evaluate(1, 1, &strict).is_some());
        assert!(evaluate(1, 0, &strict).is_none());
    }
}
