//! Matching a parsed filter against an event's body and headers: pure,
//! total (no input panics), and the one place the filter rules of
//! `super`'s doc are carried out.

use super::{Cmp, Cond, Match, Op, Pattern};
use serde_json::Value;
use std::cmp::Ordering;

/// The headers as filters see them: an object of lower-cased names, each
/// a string, or the list of its values when the header is repeated.
pub fn headers_value(headers: &[(String, String)]) -> Value {
    let pairs = headers
        .iter()
        .map(|(n, v)| (n.to_ascii_lowercase(), v.clone()));
    crate::support::form::to_object(pairs.collect())
}

/// The body as filters see it: a form (by its `Content-Type`) as the
/// object of its fields, anything else as JSON; `None` when it is neither.
pub fn body_value(body: &[u8], content_type: Option<&str>) -> Option<Value> {
    if crate::support::form::is_form(content_type) {
        crate::support::form::decode(body)
            .ok()
            .map(crate::support::form::to_object)
    } else {
        serde_json::from_slice(body).ok()
    }
}

/// Whether every condition of `p` holds for the value at its place
/// (`None`: missing).
pub(super) fn pattern_holds(p: &Pattern, v: Option<&Value>) -> bool {
    p.0.iter().all(|c| match c {
        Cond::Field(name, m) => field_holds(name, m, v),
        Cond::Or(ps) => ps.iter().any(|p| pattern_holds(p, v)),
        Cond::And(ps) => ps.iter().all(|p| pattern_holds(p, v)),
        Cond::Not(p) => !pattern_holds(p, v),
    })
}

/// A field of an object; of an array, the field of any one element; of
/// anything else (or of nothing), a missing field.
fn field_holds(name: &str, m: &Match, v: Option<&Value>) -> bool {
    match v {
        Some(Value::Object(o)) => match_holds(m, o.get(name)),
        Some(Value::Array(items)) => items.iter().any(|e| field_holds(name, m, Some(e))),
        _ => match_holds(m, None),
    }
}

fn match_holds(m: &Match, v: Option<&Value>) -> bool {
    match m {
        Match::Equals(x) => equals(x, v),
        Match::Nested(p) => pattern_holds(p, v),
        Match::Ops(ops) => ops.iter().all(|op| op_holds(op, v)),
    }
}

fn op_holds(op: &Op, v: Option<&Value>) -> bool {
    match op {
        Op::Eq(x) => equals(x, v),
        Op::Neq(x) => !equals(x, v),
        Op::In(xs) => xs.iter().any(|x| equals(x, v)),
        Op::Nin(xs) => !xs.iter().any(|x| equals(x, v)),
        Op::Exist(want) => v.is_some() == *want,
        Op::Cmp(c, x) => any_element(v, |e| compare(*c, e, x)),
        Op::StartsWith(s) => any_element(v, |e| e.as_str().is_some_and(|t| t.starts_with(s))),
        Op::EndsWith(s) => any_element(v, |e| e.as_str().is_some_and(|t| t.ends_with(s))),
        Op::Or(ms) => ms.iter().any(|m| match_holds(m, v)),
        Op::And(ms) => ms.iter().all(|m| match_holds(m, v)),
        Op::Not(m) => !match_holds(m, v),
    }
}

/// Equal as JSON, no conversion; an array also equals what it holds.
fn equals(x: &Value, v: Option<&Value>) -> bool {
    match v {
        None => false,
        Some(v) if same(v, x) => true,
        Some(Value::Array(items)) => items.iter().any(|e| same(e, x)),
        Some(_) => false,
    }
}

/// JSON equality with numbers compared by value (`1` is `1.0`), at any
/// depth, as the comparisons compare them.
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => number_order(x, y) == Some(Ordering::Equal),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, a)| y.get(k).is_some_and(|b| same(a, b)))
        }
        _ => a == b,
    }
}

/// `f` holds for the value, or for one element of an array.
fn any_element(v: Option<&Value>, f: impl Fn(&Value) -> bool) -> bool {
    match v {
        None => false,
        Some(Value::Array(items)) => items.iter().any(f),
        Some(v) => f(v),
    }
}

/// Two numbers or two strings (by bytes); any other pair is false.
fn compare(c: Cmp, v: &Value, operand: &Value) -> bool {
    let order = match (v, operand) {
        (Value::Number(a), Value::Number(b)) => number_order(a, b),
        (Value::String(a), Value::String(b)) => Some(a.as_bytes().cmp(b.as_bytes())),
        _ => None,
    };
    match (c, order) {
        (_, None) => false,
        (Cmp::Gt, Some(o)) => o == Ordering::Greater,
        (Cmp::Gte, Some(o)) => o != Ordering::Less,
        (Cmp::Lt, Some(o)) => o == Ordering::Less,
        (Cmp::Lte, Some(o)) => o != Ordering::Greater,
    }
}

/// Integers exactly (an `f64` loses digits past 2^53), else as `f64`.
fn number_order(a: &serde_json::Number, b: &serde_json::Number) -> Option<Ordering> {
    if let (Some(x), Some(y)) = (a.as_i64(), b.as_i64()) {
        return Some(x.cmp(&y));
    }
    if let (Some(x), Some(y)) = (a.as_u64(), b.as_u64()) {
        return Some(x.cmp(&y));
    }
    a.as_f64()?.partial_cmp(&b.as_f64()?)
}
