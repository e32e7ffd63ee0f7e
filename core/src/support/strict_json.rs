//! Helpers for request bodies parsed with `#[serde(deny_unknown_fields)]`
//! structs, so that every refusal can name its field.
//!
//! serde reports an unknown field by name but a wrong type by position only,
//! and a `Value` has no position. So fields are read as `Field<T>`, which
//! never fails: it records a wrong type, and the validator that knows the
//! field's name and its expected form reports it.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// One field of a strict JSON body, as found.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) enum Field<T> {
    /// Missing, or `null`: both mean "use the default".
    #[default]
    Absent,
    /// A value of the expected type, not yet range-checked.
    Given(T),
    /// Present, but not of the expected type.
    WrongType,
}

impl<T> Field<T> {
    /// The value if it has the expected type; absent and wrong alike are
    /// `None`, for fields whose message is the same for both.
    pub(crate) fn given(self) -> Option<T> {
        match self {
            Field::Given(v) => Some(v),
            Field::Absent | Field::WrongType => None,
        }
    }
}

impl<'de, T: DeserializeOwned> Deserialize<'de> for Field<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        if v.is_null() {
            return Ok(Field::Absent);
        }
        Ok(T::deserialize(&v).map_or(Field::WrongType, Field::Given))
    }
}

/// The field name in serde's "unknown field" error, if that is what `err`
/// is. serde words it ``unknown field `x`, expected one of `a`, `b` ``; the
/// name is taken up to the last "`, expected" so a name holding a backtick
/// is still read whole.
pub(crate) fn unknown_field(err: &serde_json::Error) -> Option<String> {
    let msg = err.to_string();
    let rest = msg.strip_prefix("unknown field `")?;
    let end = rest
        .rfind("`, expected")
        .or_else(|| rest.rfind("`, there are no fields"))?;
    Some(rest[..end].to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[derive(Debug, Default, Deserialize)]
    #[serde(deny_unknown_fields, default)]
    struct Probe {
        n: Field<u64>,
        s: Field<String>,
    }

    #[test]
    fn a_field_is_absent_given_or_of_the_wrong_type() {
        let table = [
            (json!({}), Field::Absent, Field::Absent),
            (json!({"n": null, "s": null}), Field::Absent, Field::Absent),
            (
                json!({"n": 7, "s": "x"}),
                Field::Given(7),
                Field::Given("x".to_owned()),
            ),
            (json!({"n": -1, "s": 1}), Field::WrongType, Field::WrongType),
            (
                json!({"n": 1.5, "s": []}),
                Field::WrongType,
                Field::WrongType,
            ),
            (
                json!({"n": "7", "s": {}}),
                Field::WrongType,
                Field::WrongType,
            ),
        ];
        for (v, n, s) in table {
            let p = Probe::deserialize(&v).unwrap();
            assert_eq!((p.n, p.s), (n, s), "{v}");
        }
    }

    #[test]
    fn serde_s_unknown_field_error_yields_the_name() {
        // Pins serde's wording: if an upgrade changes it, this fails here
        // rather than unknown fields turning into a generic body error.
        let table = [
            (json!({"x": 1}), "x"),
            (json!({"n": 1, "fitler": {}}), "fitler"),
            (json!({"a`, expected b": 1}), "a`, expected b"),
            (json!({"": 1}), ""),
        ];
        for (v, name) in table {
            let err = Probe::deserialize(&v).unwrap_err();
            assert_eq!(unknown_field(&err).as_deref(), Some(name), "{err}");
        }
        let other = Probe::deserialize(&json!("not an object")).unwrap_err();
        assert_eq!(unknown_field(&other), None, "{other}");
    }
}
