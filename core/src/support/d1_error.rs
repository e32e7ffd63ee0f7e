//! Classification of platform errors at the boundary where they appear.

use crate::state::error_code::{ErrorCode, Failure};
use crate::support::redact::truncate;

/// Longest error message kept from a platform error.
pub const MAX_ERROR_MESSAGE_BYTES: usize = 300;

/// Classifies an error raised by a D1 call.
///
/// A constraint violation or an oversized value is a property of the data
/// and will fail again the same way, so it is poison. Everything else D1
/// reports (busy, unavailable, a missing table while a migration is being
/// fixed, a reset connection) may pass, so it is `D1_UNAVAILABLE` and retried.
pub fn classify_d1_error(message: &str) -> Failure {
    let lower = message.to_ascii_lowercase();
    let code = if lower.contains("constraint failed") || lower.contains("sqlite_constraint") {
        ErrorCode::SchemaMismatch
    } else if lower.contains("too big") || lower.contains("sqlite_toobig") {
        ErrorCode::BadPayload
    } else {
        ErrorCode::D1Unavailable
    };
    Failure::new(
        code,
        format!("D1: {}", truncate(message, MAX_ERROR_MESSAGE_BYTES)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::error_code::FailureClass;

    #[test]
    fn d1_errors_are_classified_by_what_they_say() {
        let table = [
            (
                "D1_ERROR: database is locked: SQLITE_BUSY",
                ErrorCode::D1Unavailable,
            ),
            (
                "D1_ERROR: no such table: events: SQLITE_ERROR",
                ErrorCode::D1Unavailable,
            ),
            ("Network connection lost.", ErrorCode::D1Unavailable),
            (
                "D1_ERROR: NOT NULL constraint failed: events.source",
                ErrorCode::SchemaMismatch,
            ),
            (
                "D1_ERROR: string or blob too big: SQLITE_TOOBIG",
                ErrorCode::BadPayload,
            ),
        ];
        for (message, code) in table {
            let f = classify_d1_error(message);
            assert_eq!(f.code, code, "{message}");
            assert!(f.message.starts_with("D1: "));
        }
        assert_eq!(
            classify_d1_error("anything").class(),
            FailureClass::Transient
        );
    }

    #[test]
    fn long_d1_errors_are_cut() {
        let f = classify_d1_error(&"x".repeat(10_000));
        assert!(f.message.len() <= MAX_ERROR_MESSAGE_BYTES + 4);
    }
}
