//! Which dead letters a listing or a replay-all applies to, in its two
//! forms: query parameters of `GET /webhook-dlq`, and the JSON `filter` of
//! the replay-all body. Both validate through one `DeadLetterField::check`,
//! so the two forms cannot drift apart.

use super::params::{
    check_destination, check_source, name_shown, one_of, refuse_unknown, set_once,
};
use super::QueryError;
use crate::state::error_code::{ErrorCode, FailureClass};
use crate::state::{EntryKind, EntryStatus};
use crate::support::strict_json::{unknown_field, Field};
use serde::Deserialize;
use serde_json::Value;

/// The dead-letter statuses a filter may name (`EntryStatus`'s spellings).
pub const DEAD_LETTER_STATUSES: [&str; 5] =
    ["pending", "replayed", "poisoned", "archived", "discarded"];
/// The failure classes a filter may name, as `FailureClass::as_str` spells them.
pub const FAILURE_CLASSES: [&str; 3] = ["transient", "poison", "unknown"];
/// The query parameters the dead-letter listing accepts; any other is refused.
pub const DEAD_LETTER_PARAMS: [&str; 11] = [
    "status",
    "class",
    "code",
    "source",
    "destination",
    "kind",
    "signature",
    "since",
    "until",
    "limit",
    "cursor",
];

/// Which dead letters a list or replay-all applies to. `None` matches all.
/// Statuses, classes and codes are typed; text outside them is refused.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DeadLetterFilter {
    /// An entry status.
    pub status: Option<EntryStatus>,
    /// A failure class.
    pub class: Option<FailureClass>,
    /// A stable error code such as `UPSTREAM_5XX`.
    pub code: Option<ErrorCode>,
    /// A source name.
    pub source: Option<String>,
    /// A destination name (entries of kind `delivery`).
    #[serde(default)]
    pub destination: Option<String>,
    /// An entry kind, `ingest` or `delivery`.
    #[serde(default)]
    pub kind: Option<EntryKind>,
    /// An error signature (`sig_` and 16 lowercase hex), grouping entries
    /// that failed the same way.
    pub signature: Option<String>,
}

/// The fields of a dead-letter filter.
#[derive(Clone, Copy)]
enum DeadLetterField {
    Status,
    Class,
    Code,
    Source,
    Destination,
    Kind,
    Signature,
}

impl DeadLetterField {
    const ALL: [DeadLetterField; 7] = [
        DeadLetterField::Status,
        DeadLetterField::Class,
        DeadLetterField::Code,
        DeadLetterField::Source,
        DeadLetterField::Destination,
        DeadLetterField::Kind,
        DeadLetterField::Signature,
    ];

    /// The name in both the query and the JSON form.
    fn name(self) -> &'static str {
        match self {
            DeadLetterField::Status => "status",
            DeadLetterField::Class => "class",
            DeadLetterField::Code => "code",
            DeadLetterField::Source => "source",
            DeadLetterField::Destination => "destination",
            DeadLetterField::Kind => "kind",
            DeadLetterField::Signature => "signature",
        }
    }

    fn from_name(name: &str) -> Option<DeadLetterField> {
        DeadLetterField::ALL.into_iter().find(|f| f.name() == name)
    }

    /// Validates a non-empty value and sets it in `f`: a value outside
    /// the field's type is refused naming the allowed ones, and a field
    /// given twice is refused.
    fn set(self, f: &mut DeadLetterFilter, param: &str, value: &str) -> Result<(), QueryError> {
        match self {
            DeadLetterField::Status => {
                let status = EntryStatus::parse(value)
                    .map_err(|_| one_of(param, value, &DEAD_LETTER_STATUSES))?;
                set_once(&mut f.status, param, status)
            }
            DeadLetterField::Class => {
                let class = FailureClass::parse(value)
                    .ok_or_else(|| one_of(param, value, &FAILURE_CLASSES))?;
                set_once(&mut f.class, param, class)
            }
            DeadLetterField::Code => {
                let code = ErrorCode::parse(value)
                    .ok_or_else(|| one_of(param, value, &ErrorCode::ALL.map(ErrorCode::as_str)))?;
                set_once(&mut f.code, param, code)
            }
            DeadLetterField::Source => set_once(&mut f.source, param, check_source(param, value)?),
            DeadLetterField::Destination => {
                set_once(&mut f.destination, param, check_destination(param, value)?)
            }
            DeadLetterField::Kind => {
                let kind = EntryKind::parse(value)
                    .map_err(|_| one_of(param, value, &["ingest", "delivery"]))?;
                set_once(&mut f.kind, param, kind)
            }
            DeadLetterField::Signature => {
                set_once(&mut f.signature, param, check_signature(param, value)?)
            }
        }
    }
}

/// An error signature as `envelope::error_signature` mints it: `sig_` and
/// 16 lowercase hex digits. Anything else could never match an entry, so it
/// is refused rather than answered with an empty list.
fn check_signature(param: &str, value: &str) -> Result<String, QueryError> {
    super::params::check_minted_id(
        param,
        value,
        "sig_",
        16,
        "an error signature (as an entry's error_signature shows)",
    )
}

/// Parses the dead-letter filter from decoded query pairs: `status`,
/// `class`, `code`, `source`, `destination`, `kind`, `signature`. Empty values count as absent.
/// A name outside `DEAD_LETTER_PARAMS` is refused; `limit` and `cursor` are
/// accepted here and read by `parse_page`, `since` and `until` by
/// `parse_time_range`.
pub fn parse_dead_letter_filter(
    params: &[(String, String)],
) -> Result<DeadLetterFilter, QueryError> {
    refuse_unknown(params, &DEAD_LETTER_PARAMS)?;
    let mut filter = DeadLetterFilter::default();
    for (name, value) in params {
        let Some(field) = DeadLetterField::from_name(name) else {
            continue;
        };
        if value.is_empty() {
            continue;
        }
        field.set(&mut filter, name, value)?;
    }
    Ok(filter)
}

/// The JSON form, as read before validation. Field order matches
/// `DeadLetterField::ALL`.
#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct FilterJson {
    status: Field<String>,
    class: Field<String>,
    code: Field<String>,
    source: Field<String>,
    destination: Field<String>,
    kind: Field<String>,
    signature: Field<String>,
}

impl FilterJson {
    fn into_fields(self) -> [(DeadLetterField, Field<String>); 7] {
        let [status, class, code, source, destination, kind, signature] = DeadLetterField::ALL;
        [
            (status, self.status),
            (class, self.class),
            (code, self.code),
            (source, self.source),
            (destination, self.destination),
            (kind, self.kind),
            (signature, self.signature),
        ]
    }
}

/// The dead-letter filter as the JSON body of replay-all: an object with
/// optional string fields `status`, `class`, `code`, `source`,
/// `destination`, `kind`, `signature`.
/// `null` (the whole filter or a field) and `""` count as absent.
///
/// An unknown field is refused under `filter.<name>`: replay-all acts on
/// everything the filter matches, so a misspelt field must not silently
/// widen it to every dead letter.
pub fn dead_letter_filter_from_json(v: &Value) -> Result<DeadLetterFilter, QueryError> {
    match v {
        Value::Null => return Ok(DeadLetterFilter::default()),
        // Checked first: serde would also read the struct from an array.
        Value::Object(_) => {}
        _ => return Err(QueryError::new(
            "filter",
            "must be a JSON object with optional string fields status, class, code, source, destination, kind and signature",
        )),
    }
    let body = FilterJson::deserialize(v).map_err(|e| json_refusal(&e))?;
    let mut filter = DeadLetterFilter::default();
    for (field, given) in body.into_fields() {
        let param = format!("filter.{}", field.name());
        match given {
            Field::Absent => {}
            Field::Given(s) if s.is_empty() => {}
            Field::Given(s) => field.set(&mut filter, &param, &s)?,
            Field::WrongType => return Err(QueryError::new(param, "must be a string or null")),
        }
    }
    Ok(filter)
}

/// The error for a JSON filter serde refused. Every field reads as
/// `Field`, which never fails, so an unknown field is the only refusal
/// expected; anything else is still reported, under `filter`.
fn json_refusal(err: &serde_json::Error) -> QueryError {
    match unknown_field(err) {
        Some(name) => QueryError::new(
            format!("filter.{}", name_shown(&name)),
            "is not a filter field; the fields are status, class, code, source, destination, kind and signature",
        ),
        None => QueryError::new("filter", format!("could not be read: {err}")),
    }
}

#[cfg(test)]
mod tests;
