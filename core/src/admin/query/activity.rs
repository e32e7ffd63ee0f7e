//! The query of `GET /activity`: what happened, oldest first, after a
//! position (`after`: a cursor this route issued, or a time), for one
//! source or destination, a page at a time. Three things happen: an event
//! is accepted (ingested), a delivery settles (delivered or
//! dead-lettered), and a dead letter is stored.
//!
//! The rows carry the time their writer read from its clock, and a write
//! commits a moment after that read: a row stamped T may become visible
//! after a reader already passed T. So the route reads only up to a
//! horizon [`ACTIVITY_SETTLE_MS`] behind its own clock, and a follower
//! polling with `next_cursor` never steps over a row committed late.

use super::cursor::{decode_cursor, encode_cursor, Cursor, CURSOR_PREFIX};
use super::event_filter::parse_since;
use super::limits::parse_limit;
use super::params::{check_destination, check_source, refuse_unknown, set_once};
use super::QueryError;

/// The query parameters the activity route accepts; any other is refused.
pub const ACTIVITY_PARAMS: [&str; 4] = ["after", "source", "destination", "limit"];

/// How far behind the reader's clock the listing stops: longer than a
/// write's commit takes after its writer read the clock (one D1 round
/// trip), short enough that a follower sees an event within seconds.
pub const ACTIVITY_SETTLE_MS: i64 = 2_000;

/// What `GET /activity` was asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActivityQuery {
    /// Items strictly after this position; the first page starts at the
    /// oldest row D1 holds.
    pub after: Option<Cursor>,
    /// Only this source's events, deliveries and dead letters.
    pub source: Option<String>,
    /// Only this destination's deliveries and dead letters, and the
    /// events routed to it.
    pub destination: Option<String>,
    /// Items on the page (1 to `MAX_LIMIT`, default `DEFAULT_LIMIT`).
    pub limit: u32,
}

/// Parses the activity query. `after` is a cursor from an earlier answer,
/// or a time (unix ms or RFC 3339, as `since` elsewhere) meaning "what
/// happened after that instant".
pub fn parse_activity_query(params: &[(String, String)]) -> Result<ActivityQuery, QueryError> {
    refuse_unknown(params, &ACTIVITY_PARAMS)?;
    let (mut after, mut source, mut destination, mut limit) = (None, None, None, None);
    for (name, value) in params {
        if value.is_empty() {
            continue;
        }
        match name.as_str() {
            "after" => set_once(&mut after, name, parse_after(value)?)?,
            "source" => set_once(&mut source, name, check_source(name, value)?)?,
            "destination" => set_once(&mut destination, name, check_destination(name, value)?)?,
            "limit" => set_once(&mut limit, name, parse_limit(Some(value))?)?,
            _ => {}
        }
    }
    Ok(ActivityQuery {
        after,
        source,
        destination,
        limit: limit.unwrap_or(super::DEFAULT_LIMIT),
    })
}

/// A cursor, or a time as the position just before anything at it.
fn parse_after(raw: &str) -> Result<Cursor, QueryError> {
    if raw.starts_with(CURSOR_PREFIX) {
        return decode_cursor(raw).map_err(|e| QueryError::new("after", e.message));
    }
    let at = parse_since(raw, "after").map_err(|e| {
        QueryError::new(
            "after",
            format!(
                "must be a cursor from an earlier answer's next_cursor, or {}",
                e.message.trim_start_matches("must be ")
            ),
        )
    })?;
    // Every row has an id, so `(at, "")` sorts before every row stamped
    // `at`: the page starts at that instant.
    Ok(Cursor {
        at_ms: at,
        id: String::new(),
    })
}

/// The newest time the listing reads up to, given the reader's clock.
pub fn activity_horizon(now_ms: i64) -> i64 {
    now_ms.saturating_sub(ACTIVITY_SETTLE_MS)
}

/// The cursor a follower polls with next. A full page (more rows were
/// found than it holds) continues after its last item; otherwise every
/// row up to the horizon (inclusive) was read, so the next poll may start
/// just after it, never before where this one started.
pub fn next_activity_cursor(
    query: &ActivityQuery,
    last: Option<&Cursor>,
    more: bool,
    horizon_ms: i64,
) -> String {
    let start = query.after.clone().unwrap_or(Cursor {
        at_ms: i64::MIN,
        id: String::new(),
    });
    // Before every row stamped one past the horizon: all rows at the
    // horizon itself were read.
    let past_horizon = Cursor {
        at_ms: horizon_ms.saturating_add(1),
        id: String::new(),
    };
    let next = match (last, more) {
        (Some(last), true) => last.clone(),
        (last, false) => [Some(start), last.cloned(), Some(past_horizon)]
            .into_iter()
            .flatten()
            .max_by(|a, b| (a.at_ms, &a.id).cmp(&(b.at_ms, &b.id)))
            .expect("at least the horizon"),
        (None, true) => start,
    };
    encode_cursor(&next)
}

#[cfg(test)]
mod tests {
    use super::super::pairs;
    use super::*;

    fn cursor(at_ms: i64, id: &str) -> Cursor {
        Cursor {
            at_ms,
            id: id.into(),
        }
    }

    #[test]
    fn the_query_reads_after_as_a_cursor_or_a_time_and_its_filters() {
        let c = encode_cursor(&cursor(1_700_000_000_000, "evt_1"));
        type Case<'a> = (
            Vec<(&'a str, &'a str)>,
            Option<Cursor>,
            Option<&'a str>,
            u32,
        );
        let table: [Case; 5] = [
            (vec![], None, None, 50),
            (
                vec![("after", c.as_str())],
                Some(cursor(1_700_000_000_000, "evt_1")),
                None,
                50,
            ),
            (
                vec![("after", "1700000000000"), ("limit", "7")],
                Some(cursor(1_700_000_000_000, "")),
                None,
                7,
            ),
            (
                vec![("after", "2023-11-14T22:13:20Z"), ("source", "demo-hmac")],
                Some(cursor(1_700_000_000_000, "")),
                Some("demo-hmac"),
                50,
            ),
            (vec![("after", ""), ("destination", "")], None, None, 50),
        ];
        for (params, after, source, limit) in table {
            let q = parse_activity_query(&pairs(&params)).unwrap();
            assert_eq!(q.after, after, "{params:?}");
            assert_eq!(q.source.as_deref(), source, "{params:?}");
            assert_eq!(q.limit, limit, "{params:?}");
        }
        let q = parse_activity_query(&pairs(&[("destination", "billing")])).unwrap();
        assert_eq!(q.destination.as_deref(), Some("billing"));
    }

    #[test]
    fn an_unknown_parameter_or_a_bad_value_is_refused_by_name() {
        let table = [
            (("cursor", "c1.x"), "cursor"),
            (("since", "1"), "since"),
            (("after", "yesterday"), "after"),
            (("after", "c1.not-a-cursor"), "after"),
            (("source", "Not A Source"), "source"),
            (("destination", "a b"), "destination"),
            (("limit", "0"), "limit"),
            (("limit", "201"), "limit"),
        ];
        for ((name, value), param) in table {
            let err = parse_activity_query(&pairs(&[(name, value)])).unwrap_err();
            assert_eq!(err.param, param, "{name}={value}");
        }
        let err = parse_activity_query(&pairs(&[("after", "yesterday")])).unwrap_err();
        assert!(err.message.contains("next_cursor"), "{}", err.message);
        let err = parse_activity_query(&pairs(&[("sourc", "x")])).unwrap_err();
        assert_eq!(
            err.message,
            "unknown query parameter; this route accepts after, source, destination, limit"
        );
        let twice = pairs(&[("source", "a"), ("source", "b")]);
        assert_eq!(parse_activity_query(&twice).unwrap_err().param, "source");
    }

    #[test]
    fn the_next_cursor_continues_a_full_page_and_else_jumps_to_the_horizon() {
        let q = |after: Option<Cursor>| ActivityQuery {
            after,
            source: None,
            destination: None,
            limit: 2,
        };
        let decode = |s: String| decode_cursor(&s).unwrap();
        let last = cursor(1_000, "evt_b");
        // A full page: after its last item, whatever the horizon.
        assert_eq!(
            decode(next_activity_cursor(&q(None), Some(&last), true, 5_000)),
            last
        );
        // A short page: everything up to the horizon was read.
        assert_eq!(
            decode(next_activity_cursor(&q(None), Some(&last), false, 5_000)),
            cursor(5_001, "")
        );
        // An empty page: past the horizon, never before where it started.
        assert_eq!(
            decode(next_activity_cursor(&q(None), None, false, 5_000)),
            cursor(5_001, "")
        );
        let ahead = cursor(9_000, "evt_z");
        assert_eq!(
            decode(next_activity_cursor(
                &q(Some(ahead.clone())),
                None,
                false,
                5_000
            )),
            ahead
        );
        // A short page's last item is at or before the horizon.
        let at = cursor(5_000, "evt_c");
        assert_eq!(
            decode(next_activity_cursor(&q(None), Some(&at), false, 5_000)),
            cursor(5_001, "")
        );
        assert_eq!(activity_horizon(10_000), 8_000);
    }
}
