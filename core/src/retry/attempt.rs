//! One failed consumer attempt as D1's `attempts` table records it: the
//! leaf both the envelope (its history) and the root-cause rule read.

use crate::state::error_code::{ErrorCode, FailureClass};
use crate::UnixMillis;
use serde::{Deserialize, Serialize};

/// One failed consumer attempt, as recorded in D1's `attempts` table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttemptRecord {
    /// Platform attempt number.
    pub attempt: u32,
    /// Failure class.
    pub class: FailureClass,
    /// Stable code.
    pub code: ErrorCode,
    /// Message (no payload, no secret).
    pub message: String,
    /// When it failed (unix ms).
    pub at_ms: UnixMillis,
    /// For `CIRCUIT_OPEN`: the failure that opened the breaker.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cause: Option<ErrorCode>,
}
