//! Pull destinations' decisions (DESIGN §3 "Pull destinations", §4
//! "Pulling"): the pull and ack request bodies, which due deliveries one
//! pull leases (oldest due first, at most `max`, about 4 MB of bodies but
//! always one), the lease it gives, and what an ack does to the delivery it
//! names. A failed ack is a failed attempt counted on the row like any call
//! (`crate::retry::delivery_attempts`), never poison. No clock or random
//! source is read here: `now` and the lease id come in.

use crate::deliver::destinations::PullSettings;
use crate::deliver::response::{classify_status, network_error};
use crate::retry::delivery_attempts::{after_failure, AfterCall, ATTEMPT_BUDGET};
use crate::retry::policy::{RetrySchedule, MAX_QUEUE_DELAY_S};
use crate::state::error_code::{ErrorCode, Failure};
use crate::state::DeliveryState;
use crate::support::redact::truncate;
use crate::support::strict_json::{unknown_field, Field};
use serde::Deserialize;
use serde_json::Value;

/// How many deliveries a pull asks for when it names no `max`.
pub const MAX_DEFAULT: u32 = 10;
/// The range of a pull's `max`.
pub const MAX_RANGE: std::ops::RangeInclusive<u64> = 1..=100;
/// About this many bytes of bodies at most in one pull's answer (always at
/// least one delivery, whatever its size), so an answer stays well inside a
/// Worker's memory and a consumer's patience.
pub const BODY_BUDGET_BYTES: u64 = 4 * 1024 * 1024;
/// The most results one ack carries: what one pull can hand out.
pub const MAX_ACK_RESULTS: usize = 100;
/// An ack's `error` is kept to this many bytes in the attempt's message.
const ACK_ERROR_BYTES: usize = 200;

/// A bad request body: the field (a dotted path such as
/// `results[0].status`, or empty for the body itself) and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BodyError {
    /// The field.
    pub field: String,
    /// What is wrong and what is expected.
    pub message: String,
}

fn body_error<T>(field: impl Into<String>, message: impl Into<String>) -> Result<T, BodyError> {
    Err(BodyError {
        field: field.into(),
        message: message.into(),
    })
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct RawPull {
    max: Field<u64>,
}

/// A pull's body (`{"max"?: 1-100}`; an empty body asks for the default):
/// how many deliveries it asks for.
pub fn parse_pull(body: &str) -> Result<u32, BodyError> {
    if body.trim().is_empty() {
        return Ok(MAX_DEFAULT);
    }
    let raw: RawPull = strict(body, "", "{\"max\": 10}")?;
    match raw.max {
        Field::Absent => Ok(MAX_DEFAULT),
        Field::Given(n) if MAX_RANGE.contains(&n) => Ok(n as u32),
        _ => body_error("max", "must be a whole number from 1 to 100"),
    }
}

/// One result of an ack: the consumer's outcome for one leased delivery.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ack {
    /// The delivery, as the pull named it.
    pub delivery_id: String,
    /// The lease it was handed out under.
    pub lease_id: String,
    /// The consumer's HTTP status, or 0 when it could not answer.
    pub status: u16,
    /// What went wrong, in the consumer's words.
    pub error: Option<String>,
    /// The consumer's own wait before the next attempt.
    pub retry_after_s: Option<u32>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct RawAckBody {
    results: Field<Vec<Value>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct RawAck {
    delivery_id: Field<String>,
    lease_id: Field<String>,
    status: Field<u64>,
    error: Field<String>,
    retry_after_s: Field<u64>,
}

/// An ack's body (`{"results": [{"delivery_id", "lease_id", "status",
/// "error"?, "retry_after_s"?}]}`), every field checked by name.
pub fn parse_ack(body: &str) -> Result<Vec<Ack>, BodyError> {
    let example = "{\"results\": [{\"delivery_id\": …, \"lease_id\": …, \"status\": 200}]}";
    let raw: RawAckBody = strict(body, "", example)?;
    let results = match raw.results {
        Field::Given(r) if !r.is_empty() && r.len() <= MAX_ACK_RESULTS => r,
        _ => {
            return body_error(
                "results",
                format!(
                "is required: a list of 1 to {MAX_ACK_RESULTS} results, one per delivery pulled"
            ),
            )
        }
    };
    let mut out = Vec::with_capacity(results.len());
    for (i, v) in results.iter().enumerate() {
        out.push(ack_of(v, &format!("results[{i}]"))?);
    }
    Ok(out)
}

fn ack_of(v: &Value, at: &str) -> Result<Ack, BodyError> {
    let raw: RawAck = strict_value(v, at, "{\"delivery_id\", \"lease_id\", \"status\"}")?;
    let id = |f: Field<String>, name: &str| match f {
        Field::Given(s) if !s.is_empty() => Ok(s),
        _ => body_error(
            format!("{at}.{name}"),
            "is required: the text the pull answered",
        ),
    };
    let delivery_id = id(raw.delivery_id, "delivery_id")?;
    let lease_id = id(raw.lease_id, "lease_id")?;
    let status =
        match raw.status {
            Field::Given(s) if s == 0 || (100..=599).contains(&s) => s as u16,
            _ => return body_error(
                format!("{at}.status"),
                "is required: the consumer's HTTP status (100-599), or 0 when it could not answer",
            ),
        };
    let error = match raw.error {
        Field::Absent => None,
        Field::Given(e) => Some(e),
        Field::WrongType => return body_error(format!("{at}.error"), "must be text"),
    };
    let retry_after_s = match raw.retry_after_s {
        Field::Absent => None,
        Field::Given(s) if s <= u64::from(MAX_QUEUE_DELAY_S) => Some(s as u32),
        _ => {
            return body_error(
                format!("{at}.retry_after_s"),
                format!("must be a whole number of seconds from 0 to {MAX_QUEUE_DELAY_S}"),
            )
        }
    };
    Ok(Ack {
        delivery_id,
        lease_id,
        status,
        error,
        retry_after_s,
    })
}

/// Parses `body` into a strict struct, naming an unknown field under `at`.
fn strict<T: serde::de::DeserializeOwned>(
    body: &str,
    at: &str,
    example: &str,
) -> Result<T, BodyError> {
    match serde_json::from_str::<Value>(body) {
        Ok(v) => strict_value(&v, at, example),
        Err(_) => body_error(
            at,
            format!("the body is not JSON; send an object such as {example}"),
        ),
    }
}

fn strict_value<T: serde::de::DeserializeOwned>(
    v: &Value,
    at: &str,
    example: &str,
) -> Result<T, BodyError> {
    if !v.is_object() {
        return body_error(at, format!("must be a JSON object such as {example}"));
    }
    T::deserialize(v).or_else(|e| match unknown_field(&e) {
        Some(name) if at.is_empty() => body_error(name, "unknown field"),
        Some(name) => body_error(format!("{at}.{name}"), "unknown field"),
        None => body_error(at, format!("must be a JSON object such as {example}")),
    })
}

/// One waiting delivery of the destination, as the pull's one read finds
/// it: oldest due first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Waiting {
    /// When it is due (unix ms; none: due since it was stored).
    pub due_at: Option<i64>,
    /// Its body's size in bytes.
    pub body_bytes: u64,
}

/// What one pull takes of the waiting deliveries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pick {
    /// How many of the first waiting ones it leases.
    pub count: usize,
    /// When the next one after them is due, from now (0: already due;
    /// none: nothing else waits among those read).
    pub next_due_in_ms: Option<i64>,
}

/// Which of `waiting` (sorted oldest due first; read `max + 1` of them, so
/// the one after tells when the next is due) a pull of `max` leases at
/// `now_ms`: the due ones, at most `max`, within [`BODY_BUDGET_BYTES`] but
/// always the first.
pub fn pick(waiting: &[Waiting], max: u32, now_ms: i64) -> Pick {
    let due = |w: &Waiting| w.due_at.is_none_or(|at| at <= now_ms);
    let mut count = 0;
    let mut bytes = 0u64;
    for w in waiting.iter().take(max as usize) {
        if !due(w) || (count > 0 && bytes.saturating_add(w.body_bytes) > BODY_BUDGET_BYTES) {
            break;
        }
        bytes = bytes.saturating_add(w.body_bytes);
        count += 1;
    }
    let next_due_in_ms = waiting
        .get(count)
        .map(|w| w.due_at.map_or(0, |at| (at - now_ms).max(0)));
    Pick {
        count,
        next_due_in_ms,
    }
}

/// The lease one pull gives its deliveries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PullLease {
    /// Fresh per pull: what an ack names.
    pub lease_id: String,
    /// When it was taken (unix ms).
    pub claimed_at: i64,
    /// When it ends (unix ms): `lease_s` after it was taken.
    pub lease_until: i64,
}

/// A lease id from 16 random bytes (the caller's random source).
pub fn lease_id(random: &[u8; 16]) -> String {
    let mut out = String::with_capacity(6 + 32);
    out.push_str("lease_");
    for b in random {
        out.push_str(&format!("{b:02x}"));
    }
    out
}

/// The lease a pull of a destination with `settings` takes at `now_ms`.
pub fn lease(now_ms: i64, settings: PullSettings, lease_id: String) -> PullLease {
    PullLease {
        lease_id,
        claimed_at: now_ms,
        lease_until: now_ms + i64::from(settings.lease_s) * 1000,
    }
}

/// A pulled delivery's row, as an ack finds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PulledRow {
    /// Its state.
    pub state: DeliveryState,
    /// The attempts counted on it before this one.
    pub attempts: u32,
    /// The lease it was last handed out under.
    pub lease_id: Option<String>,
    /// When that lease ends, while it is `delivering`.
    pub lease_until: Option<i64>,
    /// Handed to `webhooks-dlq`, its entry not yet stored.
    pub handed_off: bool,
}

/// What an ack answers for one delivery (§4, "Pulling").
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AckState {
    /// Delivered (now, or already).
    Delivered,
    /// Due again at `due_at` (unix ms).
    Pending {
        /// When it is due.
        due_at: i64,
    },
    /// Handed to the DLQ.
    DeadLettered,
    /// The lease is not the delivery's current one, or has passed: nothing
    /// changed.
    LeaseExpired,
    /// No such delivery of this destination.
    Unknown,
}

impl AckState {
    /// Its name in the answer.
    pub fn as_str(&self) -> &'static str {
        match self {
            AckState::Delivered => "delivered",
            AckState::Pending { .. } => "pending",
            AckState::DeadLettered => "dead_lettered",
            AckState::LeaseExpired => "lease_expired",
            AckState::Unknown => "unknown",
        }
    }
}

/// What an ack does to its delivery.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Settlement {
    /// Nothing is written; the answer is this.
    Unchanged(AckState),
    /// A 2xx: the row is `delivered`, its attempt counted.
    Deliver,
    /// A failed attempt: retried on the schedule or handed to the DLQ, as
    /// the row's count decides.
    Fail(AfterCall),
}

impl Settlement {
    /// What the ack answers once the settlement is written at `now_ms`.
    pub fn answer(&self, now_ms: i64) -> AckState {
        match self {
            Settlement::Unchanged(s) => s.clone(),
            Settlement::Deliver => AckState::Delivered,
            Settlement::Fail(after) => match after.due_at(now_ms) {
                Some(due_at) => AckState::Pending { due_at },
                None => AckState::DeadLettered,
            },
        }
    }
}

/// What `ack` does to its delivery's `row` (none: no such delivery of this
/// destination) at `now_ms`. A delivered one stays delivered whatever is
/// acked again; an ack under the current, live lease settles it; a 2xx
/// under a lease that passed is still accepted while the delivery has not
/// been handed out again since (the consumer has it); anything else
/// changes nothing.
pub fn settle(
    row: Option<&PulledRow>,
    ack: &Ack,
    now_ms: i64,
    schedule: &RetrySchedule,
) -> Settlement {
    let Some(row) = row else {
        return Settlement::Unchanged(AckState::Unknown);
    };
    match row.state {
        DeliveryState::Delivered => return Settlement::Unchanged(AckState::Delivered),
        DeliveryState::DeadLettered => return Settlement::Unchanged(AckState::DeadLettered),
        _ if row.handed_off => return Settlement::Unchanged(AckState::DeadLettered),
        _ => {}
    }
    let same_lease = row.lease_id.as_deref() == Some(ack.lease_id.as_str());
    let ok = (200..=299).contains(&ack.status);
    let live = same_lease
        && row.state == DeliveryState::Delivering
        && row.lease_until.is_some_and(|until| until >= now_ms);
    if live && !ok {
        let failure = failure_of(ack);
        return Settlement::Fail(after_failure(failure, false, row.attempts, schedule));
    }
    let not_handed_out_since = same_lease
        && matches!(
            row.state,
            DeliveryState::Pending | DeliveryState::Delivering
        );
    if ok && not_handed_out_since {
        return Settlement::Deliver;
    }
    Settlement::Unchanged(AckState::LeaseExpired)
}

/// A pull lease that ended with no ack (DESIGN §3: "a lease that ends
/// without an ack (`TIMEOUT`, settled by the cron)"): a failed attempt,
/// retried on the schedule or handed off at the sixth; `None` while the
/// lease holds, or when the row is no longer leased.
pub fn lease_ended(row: &PulledRow, now_ms: i64, schedule: &RetrySchedule) -> Option<AfterCall> {
    let ended = row.state == DeliveryState::Delivering
        && !row.handed_off
        && row.lease_id.is_some()
        && row.lease_until.is_some_and(|until| until < now_ms);
    ended.then(|| {
        let failure = Failure::new(
            ErrorCode::Timeout,
            "the pull consumer's lease ended without an ack; the consumer may have stopped or crashed mid-delivery",
        );
        after_failure(failure, false, row.attempts, schedule)
    })
}

/// What a replay does to a pull destination's delivery (DESIGN §3: "its
/// replay makes it pullable again with a fresh budget"; §4: it reports
/// `succeeded` then).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Revival {
    /// Delivered already: nothing changes, and the replay succeeds.
    AlreadyDelivered,
    /// A consumer holds it under a live lease until then (unix ms): nothing
    /// changes, and the replay fails (its ack settles it).
    Held {
        /// When the lease ends.
        until: i64,
    },
    /// Pending again, due now, no attempt counted, no lease, no hand-off.
    Revive,
}

/// What a replay at `now_ms` does to a delivery in `state` whose pull
/// lease (if any) ends at `lease_until`. A lease that has passed is no
/// hold: the periodic check would only count it as a failed attempt, and
/// the replay starts a fresh budget anyway.
pub fn revival(state: DeliveryState, lease_until: Option<i64>, now_ms: i64) -> Revival {
    match (state, lease_until) {
        (DeliveryState::Delivered, _) => Revival::AlreadyDelivered,
        (DeliveryState::Delivering, Some(until)) if until >= now_ms => Revival::Held { until },
        _ => Revival::Revive,
    }
}

/// A waiting pull delivery, as the periodic check reads it for
/// [`unpulled`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WaitingRow {
    /// When it became due (unix ms).
    pub due_at: i64,
    /// The attempts counted on it.
    pub attempts: u32,
    /// Its last failure's code, if it failed before.
    pub last_error: Option<ErrorCode>,
}

/// The `due_at` before which a waiting pull delivery is over
/// `PARK_MAX_AGE` at `now_ms` (the periodic check's read).
pub fn unpulled_due_before(now_ms: i64, max_age_ms: i64) -> i64 {
    now_ms.saturating_sub(max_age_ms)
}

/// Why a waiting, unleased pull delivery of `destination` goes to the DLQ
/// at `now_ms`, if it does:
/// - due and unpulled for longer than `PARK_MAX_AGE` (`max_age_ms`):
///   `TIMEOUT`, so a consumer that is gone never fills D1 (DESIGN §3);
/// - its budget spent (a sixth failed attempt whose hand-off could not be
///   sent): its last failure, handed off again.
pub fn unpulled(
    destination: &str,
    row: &WaitingRow,
    now_ms: i64,
    max_age_ms: i64,
) -> Option<Failure> {
    if row.attempts >= ATTEMPT_BUDGET {
        let code = row.last_error.unwrap_or(ErrorCode::Timeout);
        return Some(Failure::new(
            code,
            format!("{destination}: its {ATTEMPT_BUDGET} attempts failed (last {code}); its hand-off to the DLQ is sent again"),
        ));
    }
    let waited_ms = now_ms - row.due_at;
    (waited_ms > max_age_ms).then(|| {
        Failure::new(
            ErrorCode::Timeout,
            format!(
                "{destination}: due and unpulled for {}s, more than PARK_MAX_AGE ({}s): no consumer pulled it; start one (hookrelay listen, or POST /api/v1/pull/{destination}), then replay this entry",
                waited_ms / 1000,
                max_age_ms / 1000
            ),
        )
    })
}

/// The failure a non-2xx ack reports, with the consumer's own wait and
/// words.
fn failure_of(ack: &Ack) -> Failure {
    let words = ack.error.as_deref().map(|e| truncate(e, ACK_ERROR_BYTES));
    let mut failure = if ack.status == 0 {
        network_error(words.unwrap_or("the pull consumer could not answer"))
    } else {
        let mut f = match classify_status(ack.status, None, 0) {
            Err(f) => f,
            // Not reached: only a non-2xx is a failure.
            Ok(()) => network_error("the pull consumer answered a 2xx"),
        };
        // The code is the status's; the words are the consumer's own (a
        // called destination's hints, such as its signing secret, do not
        // apply to a consumer that pulled).
        f.message = format!("the pull consumer acked status {}", ack.status);
        if let Some(words) = words {
            f.message = format!("{}: {words}", f.message);
        }
        f
    };
    failure.retry_after_s = ack.retry_after_s;
    failure
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::error_code::ErrorCode;

    const NOW: i64 = 1_000_000;

    #[test]
    fn a_pull_body_asks_for_one_to_a_hundred_and_names_a_bad_field() {
        let table: [(&str, Result<u32, &str>); 10] = [
            ("", Ok(10)),
            ("{}", Ok(10)),
            ("{\"max\": null}", Ok(10)),
            ("{\"max\": 1}", Ok(1)),
            ("{\"max\": 100}", Ok(100)),
            ("{\"max\": 0}", Err("max")),
            ("{\"max\": 101}", Err("max")),
            ("{\"max\": \"5\"}", Err("max")),
            ("{\"max\": 5, \"wait_s\": 1}", Err("wait_s")),
            ("[1]", Err("")),
        ];
        for (body, want) in table {
            assert_eq!(
                parse_pull(body).map_err(|e| e.field),
                want.map_err(String::from),
                "{body}"
            );
        }
        assert!(parse_pull("{nope")
            .unwrap_err()
            .message
            .contains("not JSON"));
    }

    #[test]
    fn an_ack_body_is_checked_field_by_field_at_any_depth() {
        let ok = r#"{"results": [{"delivery_id": "e1", "lease_id": "l1", "status": 503, "error": "down", "retry_after_s": 90}, {"delivery_id": "e2", "lease_id": "l1", "status": 0}]}"#;
        let acks = parse_ack(ok).unwrap();
        assert_eq!(
            acks[0],
            Ack {
                delivery_id: "e1".into(),
                lease_id: "l1".into(),
                status: 503,
                error: Some("down".into()),
                retry_after_s: Some(90)
            }
        );
        assert_eq!(
            (acks[1].status, acks[1].error.clone(), acks[1].retry_after_s),
            (0, None, None)
        );
        let one = |extra: &str| {
            format!(r#"{{"results": [{{"delivery_id": "e1", "lease_id": "l1"{extra}}}]}}"#)
        };
        let table = [
            (
                one(r#", "status": 200, "stauts": 500"#),
                "results[0].stauts",
            ),
            (
                one(r#", "status": 200, "retry_after_s": -1"#),
                "results[0].retry_after_s",
            ),
            (
                one(r#", "status": 200, "retry_after_s": 43201"#),
                "results[0].retry_after_s",
            ),
            (one(r#", "status": 200, "error": 5"#), "results[0].error"),
            (one(r#", "status": 600"#), "results[0].status"),
            (one(r#", "status": 99"#), "results[0].status"),
            (one(""), "results[0].status"),
            (
                r#"{"results": [{"lease_id": "l", "status": 200}]}"#.into(),
                "results[0].delivery_id",
            ),
            (
                r#"{"results": [{"delivery_id": "e", "lease_id": "", "status": 200}]}"#.into(),
                "results[0].lease_id",
            ),
            (r#"{"results": [7]}"#.into(), "results[0]"),
            (r#"{"results": []}"#.into(), "results"),
            (r#"{}"#.into(), "results"),
            (r#"{"results": [], "ack": 1}"#.into(), "ack"),
        ];
        for (body, field) in table {
            assert_eq!(parse_ack(&body).unwrap_err().field, field, "{body}");
        }
    }

    fn waiting(due_at: Option<i64>, body_bytes: u64) -> Waiting {
        Waiting { due_at, body_bytes }
    }

    #[test]
    fn a_pull_leases_the_due_ones_oldest_first_within_max_and_about_4_mb_but_always_one() {
        let mb = 1024 * 1024;
        let due = Some(NOW - 5);
        let table = [
            (vec![], 10, 0, None),
            (vec![waiting(Some(NOW + 1500), 10)], 10, 0, Some(1500)),
            (vec![waiting(due, 10), waiting(None, 10)], 10, 2, None),
            (
                vec![
                    waiting(due, 10),
                    waiting(Some(NOW), 10),
                    waiting(Some(NOW + 7), 1),
                ],
                10,
                2,
                Some(7),
            ),
            (vec![waiting(due, 1); 3], 2, 2, Some(0)),
            (
                vec![waiting(due, 3 * mb), waiting(due, mb), waiting(due, 1)],
                10,
                2,
                Some(0),
            ),
            (vec![waiting(due, 9 * mb), waiting(due, 1)], 10, 1, Some(0)),
        ];
        for (rows, max, count, next) in table {
            let got = pick(&rows, max, NOW);
            assert_eq!(
                (got.count, got.next_due_in_ms),
                (count, next),
                "{rows:?} max {max}"
            );
        }
    }

    #[test]
    fn a_lease_is_fresh_per_pull_and_lasts_lease_s() {
        let id = lease_id(&[0xab; 16]);
        assert_eq!(id, format!("lease_{}", "ab".repeat(16)));
        let l = lease(NOW, PullSettings { lease_s: 60 }, id.clone());
        assert_eq!(
            l,
            PullLease {
                lease_id: id,
                claimed_at: NOW,
                lease_until: NOW + 60_000
            }
        );
        assert_ne!(lease_id(&[1; 16]), lease_id(&[2; 16]));
    }

    fn row(
        state: DeliveryState,
        attempts: u32,
        lease: Option<&str>,
        until: Option<i64>,
    ) -> PulledRow {
        PulledRow {
            state,
            attempts,
            lease_id: lease.map(String::from),
            lease_until: until,
            handed_off: false,
        }
    }

    #[test]
    fn a_lease_that_ended_with_no_ack_is_a_timeout_retried_or_handed_off_at_the_sixth() {
        use DeliveryState::*;
        let s = RetrySchedule::default();
        let (live, passed) = (Some(NOW + 1), Some(NOW - 1));
        #[rustfmt::skip]
        let table = [
            (row(Delivering, 0, Some("l"), passed), Some("retry")),
            (row(Delivering, 5, Some("l"), passed), Some("hand_off")),
            (row(Delivering, 0, Some("l"), live), None),
            (row(Pending, 0, Some("l"), passed), None),
            (row(Delivered, 1, Some("l"), passed), None),
            (row(Delivering, 0, None, passed), None),
        ];
        for (r, want) in table {
            let got = lease_ended(&r, NOW, &s).map(|after| match after {
                AfterCall::Retry { failure, .. } => {
                    assert_eq!(failure.code, ErrorCode::Timeout);
                    "retry"
                }
                AfterCall::HandOff { .. } => "hand_off",
                AfterCall::Delivered => "delivered",
            });
            assert_eq!(got, want, "{r:?}");
        }
        let mut handed = row(Delivering, 0, Some("l"), passed);
        handed.handed_off = true;
        assert_eq!(lease_ended(&handed, NOW, &s), None, "the DLQ has it");
    }

    fn ack(lease: &str, status: u16) -> Ack {
        Ack {
            delivery_id: "e1".into(),
            lease_id: lease.into(),
            status,
            error: None,
            retry_after_s: None,
        }
    }

    /// Each (row, ack) and what the ack answers (one line each: a table).
    #[rustfmt::skip]
    fn acks_and_answers() -> Vec<(Option<PulledRow>, Ack, AckState)> {
        use DeliveryState::*;
        let (live, passed) = (Some(NOW + 1), Some(NOW - 1));
        vec![
            (None, ack("l1", 200), AckState::Unknown),
            (Some(row(Delivering, 0, Some("l1"), live)), ack("l1", 200), AckState::Delivered),
            (Some(row(Delivering, 0, Some("l1"), live)), ack("l1", 500), AckState::Pending { due_at: NOW + 30_000 }),
            (Some(row(Delivering, 3, Some("l1"), live)), ack("l1", 404), AckState::Pending { due_at: NOW + 240_000 }),
            (Some(row(Delivering, 5, Some("l1"), live)), ack("l1", 0), AckState::DeadLettered),
            (Some(row(Delivered, 1, Some("l1"), None)), ack("l1", 500), AckState::Delivered),
            (Some(row(Delivered, 1, Some("l2"), None)), ack("l1", 200), AckState::Delivered),
            (Some(row(DeadLettered, 6, Some("l1"), None)), ack("l1", 200), AckState::DeadLettered),
            // An old lease: handed out again since.
            (Some(row(Delivering, 1, Some("l2"), live)), ack("l1", 200), AckState::LeaseExpired),
            (Some(row(Delivering, 1, Some("l2"), live)), ack("l1", 500), AckState::LeaseExpired),
            (Some(row(Pending, 1, Some("l2"), None)), ack("l1", 200), AckState::LeaseExpired),
            // The lease passed, not handed out again: only a 2xx counts.
            (Some(row(Delivering, 0, Some("l1"), passed)), ack("l1", 500), AckState::LeaseExpired),
            (Some(row(Delivering, 0, Some("l1"), passed)), ack("l1", 204), AckState::Delivered),
            (Some(row(Pending, 1, Some("l1"), None)), ack("l1", 200), AckState::Delivered),
            (Some(row(Pending, 0, None, None)), ack("l1", 200), AckState::LeaseExpired),
        ]
    }

    #[test]
    fn an_ack_settles_only_the_current_live_lease_and_a_2xx_is_delivered_once() {
        use DeliveryState::*;
        let s = RetrySchedule::default();
        for (r, a, want) in acks_and_answers() {
            let got = settle(r.as_ref(), &a, NOW, &s);
            assert_eq!(got.answer(NOW), want, "{r:?} {a:?}");
            let unchanged = matches!(got, Settlement::Unchanged(_));
            let written = matches!(want, AckState::Pending { .. } | AckState::DeadLettered)
                && !unchanged
                || matches!(got, Settlement::Deliver);
            assert_eq!(unchanged, !written, "{r:?} {a:?}");
        }
        let mut handed = row(Pending, 6, Some("l1"), None);
        handed.handed_off = true;
        assert_eq!(
            settle(Some(&handed), &ack("l1", 200), NOW, &s),
            Settlement::Unchanged(AckState::DeadLettered)
        );
    }

    #[test]
    fn a_failed_ack_is_a_failed_attempt_never_poison_with_the_consumers_wait_and_words() {
        let s = RetrySchedule::default();
        let r = row(DeliveryState::Delivering, 0, Some("l1"), Some(NOW + 1));
        let table = [
            (400, None, ErrorCode::Upstream4xx, 30_000),
            (401, None, ErrorCode::AuthExpired, 30_000),
            (503, Some(600), ErrorCode::Upstream5xx, 600_000),
            (429, Some(5), ErrorCode::RateLimited, 30_000),
            (0, None, ErrorCode::Upstream5xx, 30_000),
        ];
        for (status, retry_after_s, code, delay_ms) in table {
            let a = Ack {
                error: Some("boom ".repeat(100)),
                retry_after_s,
                ..ack("l1", status)
            };
            let Settlement::Fail(AfterCall::Retry { failure, .. }) = settle(Some(&r), &a, NOW, &s)
            else {
                panic!("{status}: a pull consumer's failure is retried");
            };
            assert_eq!(failure.code, code, "{status}");
            assert!(
                failure.message.contains("boom") && failure.message.len() < 400,
                "{}",
                failure.message
            );
            assert!(
                status == 0
                    || failure
                        .message
                        .starts_with(&format!("the pull consumer acked status {status}: boom")),
                "{}",
                failure.message
            );
            assert!(!failure.message.contains("DOWNSTREAM_SIGNING_SECRET"));
            assert_eq!(
                settle(Some(&r), &a, NOW, &s).answer(NOW),
                AckState::Pending {
                    due_at: NOW + delay_ms
                }
            );
        }
    }

    #[test]
    fn a_replay_revives_what_is_not_delivered_nor_held_by_a_live_lease() {
        use DeliveryState::*;
        let table = [
            (Delivered, None, Revival::AlreadyDelivered),
            (Delivered, Some(NOW + 5), Revival::AlreadyDelivered),
            (Delivering, Some(NOW + 5), Revival::Held { until: NOW + 5 }),
            (Delivering, Some(NOW), Revival::Held { until: NOW }),
            (Delivering, Some(NOW - 1), Revival::Revive),
            (Delivering, None, Revival::Revive),
            (DeadLettered, None, Revival::Revive),
            (Pending, None, Revival::Revive),
            (Parked, None, Revival::Revive),
        ];
        for (state, until, want) in table {
            assert_eq!(revival(state, until, NOW), want, "{state:?} {until:?}");
        }
    }

    #[test]
    fn an_unpulled_delivery_goes_to_the_dlq_past_park_max_age_or_with_its_budget_spent() {
        const AGE: i64 = 3_600_000;
        let w = |due_at, attempts, last_error| WaitingRow {
            due_at,
            attempts,
            last_error,
        };
        let table: [(WaitingRow, Option<ErrorCode>); 6] = [
            (w(NOW, 0, None), None),
            (w(NOW - AGE, 0, None), None),
            (w(NOW - AGE - 1, 0, None), Some(ErrorCode::Timeout)),
            (
                w(NOW - AGE - 1, 3, Some(ErrorCode::Upstream5xx)),
                Some(ErrorCode::Timeout),
            ),
            (
                w(NOW, 6, Some(ErrorCode::Upstream4xx)),
                Some(ErrorCode::Upstream4xx),
            ),
            (w(NOW, 5, Some(ErrorCode::Upstream4xx)), None),
        ];
        for (row, want) in table {
            let got = unpulled("inbox", &row, NOW, AGE);
            assert_eq!(got.as_ref().map(|f| f.code), want, "{row:?}");
            if let Some(f) = got {
                assert!(f.message.starts_with("inbox: "), "{}", f.message);
            }
        }
        let f = unpulled("inbox", &w(NOW - AGE - 5_000, 0, None), NOW, AGE).unwrap();
        assert!(
            f.message.contains("PARK_MAX_AGE (3600s)") && f.message.contains("3605s"),
            "{}",
            f.message
        );
        assert_eq!(unpulled_due_before(NOW, AGE), NOW - AGE);
    }
}
