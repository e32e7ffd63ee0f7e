//! Route filters (DESIGN §3): which events a route sends on, decided from
//! the event's body and headers before any call.
//!
//! A filter is `{"body"?: pattern, "headers"?: pattern}`; both must match
//! when both are given. A pattern is a JSON object. At the pattern's level
//! a key is a field name, or one of `$or`, `$and` (non-empty lists of
//! patterns) and `$not` (a pattern). A field maps to:
//! - a value that is not an object: equality;
//! - an object without `$` keys: a nested pattern over that field;
//! - an object of operators, all of which must hold: `$eq`, `$neq`, `$in`,
//!   `$nin`, `$exist`, `$gt`, `$gte`, `$lt`, `$lte`, `$startsWith`,
//!   `$endsWith`, and `$or`, `$and`, `$not` over field conditions.
//!
//! The loose points, decided here (and in docs/routes.md):
//! - values are never converted: `"100"` is not `100`, `true` is not
//!   `"true"`; numbers are compared by value (`1` equals `1.0`);
//! - `$gt`, `$gte`, `$lt`, `$lte` compare two numbers or two strings (by
//!   their UTF-8 bytes); any other pair is false, and the operand itself
//!   must be a number or a string (else refused at parse);
//! - a missing field fails equality, `$eq`, `$in`, the comparisons and
//!   `$startsWith`/`$endsWith`, and matches `$neq`, `$nin` and
//!   `$exist: false` (the negations are exactly `$not` of `$eq`, `$in`);
//!   a field holding `null` exists;
//! - a condition on an array field holds when the array itself or any one
//!   of its elements satisfies it (so a scalar matches an array holding
//!   it, and a nested pattern matches when one element matches all of it);
//! - header names match whatever their case (they are lower-cased on both
//!   sides); a header's value is a string, and a repeated header is the
//!   list of its values;
//! - a form body is the object of its fields, every value a string and a
//!   repeated field the list of its values (`crate::support::form`);
//! - a body that parses as neither JSON nor a form matches no body
//!   pattern;
//! - an empty pattern, an empty `$or`/`$and`/`$in`/`$nin` list, an unknown
//!   operator, a field mixing operators and names, and nesting deeper than
//!   `MAX_DEPTH` are refused at parse, naming their path.

mod matcher;
mod parse;

#[cfg(test)]
mod tests;

pub use matcher::{body_value, headers_value};
pub use parse::{parse_filter, FilterError, MAX_DEPTH};

use serde_json::Value;

/// A route's filter, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Filter {
    /// `body`: matched against the body (a form as its fields).
    pub body: Option<Pattern>,
    /// `headers`: matched against the headers, names lower-cased.
    pub headers: Option<Pattern>,
}

/// A pattern: every condition must hold for the value at its place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pattern(pub Vec<Cond>);

/// One condition of a pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cond {
    /// The named field (lower-cased for headers) satisfies the match.
    Field(String, Match),
    /// Any of the patterns holds.
    Or(Vec<Pattern>),
    /// All of the patterns hold.
    And(Vec<Pattern>),
    /// The pattern does not hold.
    Not(Box<Pattern>),
}

/// What a field's value must satisfy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Match {
    /// Equal to this value (not an object).
    Equals(Value),
    /// A nested pattern over the field's object.
    Nested(Pattern),
    /// Every operator holds.
    Ops(Vec<Op>),
}

/// An operator on a field's value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// `$eq`.
    Eq(Value),
    /// `$neq`: not `$eq`.
    Neq(Value),
    /// `$in`: equal to one of these.
    In(Vec<Value>),
    /// `$nin`: not `$in`.
    Nin(Vec<Value>),
    /// `$exist`: whether the field is present.
    Exist(bool),
    /// `$gt`, `$gte`, `$lt`, `$lte`, with a number or string operand.
    Cmp(Cmp, Value),
    /// `$startsWith`.
    StartsWith(String),
    /// `$endsWith`.
    EndsWith(String),
    /// `$or` over field conditions.
    Or(Vec<Match>),
    /// `$and` over field conditions.
    And(Vec<Match>),
    /// `$not` of a field condition.
    Not(Box<Match>),
}

/// A comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cmp {
    /// `$gt`
    Gt,
    /// `$gte`
    Gte,
    /// `$lt`
    Lt,
    /// `$lte`
    Lte,
}

impl Filter {
    /// Whether an event matches: `headers` and `body` are as
    /// `headers_value` and `body_value` build them (once per event, for
    /// all its routes). `body` is `None` for a body that is neither JSON
    /// nor a form.
    pub fn matches(&self, headers: &Value, body: Option<&Value>) -> bool {
        let part = |p: &Option<Pattern>, v: Option<&Value>| match (p, v) {
            (None, _) => true,
            (Some(_), None) => false,
            (Some(p), Some(v)) => matcher::pattern_holds(p, Some(v)),
        };
        part(&self.headers, Some(headers)) && part(&self.body, body)
    }

    /// Whether the filter reads the body (so an event's body need only be
    /// parsed when some route's filter does).
    pub fn reads_body(&self) -> bool {
        self.body.is_some()
    }

    /// Whether the filter reads the headers.
    pub fn reads_headers(&self) -> bool {
        self.headers.is_some()
    }
}
