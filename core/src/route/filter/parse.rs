//! A filter's JSON → `Filter`, refusing anything it cannot mean, with the
//! path of the offending part (`.body.total.$gte`).

use super::{Cmp, Cond, Filter, Match, Op, Pattern};
use serde_json::{Map, Value};

/// How deep patterns may nest (fields, `$or`, `$and`, `$not`): deep
/// enough for any real payload, shallow enough that matching cannot
/// exhaust the stack.
pub const MAX_DEPTH: usize = 32;

/// A part of a filter that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilterError {
    /// Where, relative to the filter: `` for the filter itself, else
    /// `.body.total.$gte`, `.headers.$or[1]`.
    pub path: String,
    /// What is wrong and what is expected.
    pub problem: String,
}

const OPERATORS: &str =
    "$eq, $neq, $in, $nin, $exist, $gt, $gte, $lt, $lte, $startsWith, $endsWith, $or, $and, $not";

type Parsed<T> = Result<T, FilterError>;

/// Out of line, not inlined per error site (wasm bytes).
#[inline(never)]
fn fail<T>(path: &str, problem: &str) -> Parsed<T> {
    Err(FilterError {
        path: path.to_string(),
        problem: problem.to_string(),
    })
}

/// Parses a route's `filter`.
pub fn parse_filter(raw: &Value) -> Parsed<Filter> {
    let Value::Object(map) = raw else {
        return fail(
            "",
            "must be an object such as {\"body\": {\"type\": \"order.created\"}}",
        );
    };
    if map.is_empty() {
        return fail(
            "",
            "is empty, so it would match every event; give body and/or headers, or remove it",
        );
    }
    if let Some(key) = map.keys().find(|k| *k != "body" && *k != "headers") {
        return fail(&format!(".{key}"), "unknown field; expected body, headers");
    }
    let part = |name: &str, lower: bool| {
        map.get(name)
            .map(|v| pattern(v, &format!(".{name}"), 1, lower))
            .transpose()
    };
    Ok(Filter {
        body: part("body", false)?,
        headers: part("headers", true)?,
    })
}

/// A pattern object; `lower` lower-cases its field names (headers).
fn pattern(v: &Value, at: &str, depth: usize, lower: bool) -> Parsed<Pattern> {
    if depth > MAX_DEPTH {
        return fail(at, "nests deeper than 32 levels");
    }
    let Value::Object(map) = v else {
        return fail(
            at,
            "must be a pattern: an object of field names to values or operators",
        );
    };
    if map.is_empty() {
        return fail(
            at,
            "is an empty pattern, which matches everything; name a field or remove it",
        );
    }
    let mut conds = Vec::with_capacity(map.len());
    for (key, value) in map {
        let here = format!("{at}.{key}");
        conds.push(match key.as_str() {
            "$or" => Cond::Or(list(value, &here, |v, at| {
                pattern(v, at, depth + 1, lower)
            })?),
            "$and" => Cond::And(list(value, &here, |v, at| {
                pattern(v, at, depth + 1, lower)
            })?),
            "$not" => Cond::Not(Box::new(pattern(value, &here, depth + 1, lower)?)),
            k if k.starts_with('$') => return fail(&here, &misplaced(k)),
            k => {
                let name = if lower {
                    k.to_ascii_lowercase()
                } else {
                    k.to_string()
                };
                Cond::Field(name, field(value, &here, depth + 1)?)
            }
        });
    }
    Ok(Pattern(conds))
}

/// Why a `$` key is refused where a pattern's field or combinator belongs.
fn misplaced(key: &str) -> String {
    if OPERATORS.split(", ").any(|op| op == key) {
        format!(
            "{key} applies to a field, not to a pattern; write {{\"<field>\": {{\"{key}\": …}}}}"
        )
    } else {
        format!("unknown operator; expected {OPERATORS}")
    }
}

/// A field's condition: a value (equality), a nested pattern or operators.
fn field(v: &Value, at: &str, depth: usize) -> Parsed<Match> {
    let Value::Object(map) = v else {
        return Ok(Match::Equals(v.clone()));
    };
    if depth > MAX_DEPTH {
        return fail(at, "nests deeper than 32 levels");
    }
    let operators = map.keys().filter(|k| k.starts_with('$')).count();
    if map.is_empty() {
        fail(
            at,
            "is an empty pattern, which matches everything; use {\"$eq\": {}} for an empty object, or {\"$exist\": true}",
        )
    } else if operators == 0 {
        Ok(Match::Nested(pattern(v, at, depth, false)?))
    } else if operators == map.len() {
        Ok(Match::Ops(ops(map, at, depth)?))
    } else {
        fail(
            at,
            "mixes operators ($…) and field names; put the fields in a nested pattern inside $and",
        )
    }
}

fn ops(map: &Map<String, Value>, at: &str, depth: usize) -> Parsed<Vec<Op>> {
    let mut out = Vec::with_capacity(map.len());
    for (key, v) in map {
        let here = format!("{at}.{key}");
        let cmp = |c| match v {
            Value::Number(_) | Value::String(_) => Ok(Op::Cmp(c, v.clone())),
            _ => fail(
                &here,
                "must be a number or a string (values are compared without conversion)",
            ),
        };
        let text = || match v {
            Value::String(s) => Ok(s.clone()),
            _ => fail(&here, "must be a string"),
        };
        let values = || match v {
            Value::Array(items) if !items.is_empty() => Ok(items.clone()),
            _ => fail(&here, "must be a non-empty list of values"),
        };
        out.push(match key.as_str() {
            "$eq" => Op::Eq(v.clone()),
            "$neq" => Op::Neq(v.clone()),
            "$in" => Op::In(values()?),
            "$nin" => Op::Nin(values()?),
            "$exist" => match v {
                Value::Bool(b) => Op::Exist(*b),
                _ => return fail(&here, "must be true or false"),
            },
            "$gt" => cmp(Cmp::Gt)?,
            "$gte" => cmp(Cmp::Gte)?,
            "$lt" => cmp(Cmp::Lt)?,
            "$lte" => cmp(Cmp::Lte)?,
            "$startsWith" => Op::StartsWith(text()?),
            "$endsWith" => Op::EndsWith(text()?),
            "$or" => Op::Or(list(v, &here, |v, at| field(v, at, depth + 1))?),
            "$and" => Op::And(list(v, &here, |v, at| field(v, at, depth + 1))?),
            "$not" => Op::Not(Box::new(field(v, &here, depth + 1)?)),
            _ => return fail(&here, &format!("unknown operator; expected {OPERATORS}")),
        });
    }
    Ok(out)
}

/// A non-empty list, each item parsed at `at[i]`.
fn list<T>(v: &Value, at: &str, item: impl Fn(&Value, &str) -> Parsed<T>) -> Parsed<Vec<T>> {
    let items = match v {
        Value::Array(items) if !items.is_empty() => items,
        _ => return fail(at, "must be a non-empty list"),
    };
    // A loop, not `collect` into a `Result` (wasm bytes).
    let mut out = Vec::with_capacity(items.len());
    for (i, v) in items.iter().enumerate() {
        out.push(item(v, &format!("{at}[{i}]"))?);
    }
    Ok(out)
}
