//! Recipe parsing: a scheme written in `SOURCES` instead of named.
//!
//! `{"hmac", "key"?, "header", "prefix"?, "parts"?, "encoding",
//! "separator"?, "signed", "timestamp"?, "id"?, "answer"?}`, or
//! `{"token": "<header>"}`. Every field is checked here, once, at startup;
//! an unknown field is refused, and an error names the field.

use super::scheme::{
    Answer, Check, Encoding, KeyForm, Layout, MacAlg, Place, Scheme, SignatureAt, Signed, Text,
    TimeUnit, Timestamp, UrlForms,
};
use super::template::{self, Piece};
use serde_json::{Map, Value};

/// A recipe field that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecipeError {
    /// The field, relative to the scheme (`encoding`, `parts.separator`).
    pub field: String,
    /// What is wrong and what is expected.
    pub problem: String,
}

fn err<T>(field: &str, problem: impl Into<String>) -> Result<T, RecipeError> {
    Err(error(field, problem.into()))
}

/// One constructor out of line, not one inlined per error site (wasm bytes).
#[inline(never)]
fn error(field: &str, problem: String) -> RecipeError {
    RecipeError {
        field: field.into(),
        problem,
    }
}

const FIELDS: [&str; 11] = [
    "hmac",
    "key",
    "header",
    "prefix",
    "parts",
    "encoding",
    "separator",
    "signed",
    "timestamp",
    "id",
    "answer",
];

/// Parses a recipe object.
pub fn parse(recipe: &Map<String, Value>) -> Result<Scheme, RecipeError> {
    if recipe.contains_key("token") {
        return token(recipe);
    }
    only(recipe, "", &FIELDS)?;
    let mac = mac_of(recipe)?;
    let key = key_of(recipe)?;
    let header = header_name(recipe, "header")?.ok_or_else(|| {
        error(
            "header",
            "is required: the header that carries the signature".into(),
        )
    })?;
    let encoding = encoding_of(recipe)?;
    let layout = layout(recipe)?;
    let parts = matches!(layout, Layout::Parts { .. });
    let timestamp = timestamp(recipe, parts)?;
    check_splits(&layout, encoding, timestamp.as_ref().map(|t| t.unit))?;
    let id = match recipe.get("id") {
        None | Some(Value::Null) => None,
        Some(v) => Some(place(v, "id")?),
    };
    let signed = string(recipe, "signed")?.ok_or_else(|| {
        error(
            "signed",
            "is required: the template of what is signed, e.g. \"{timestamp}.{body}\"".into(),
        )
    })?;
    check_template(signed, timestamp.as_ref(), id.as_ref())?;
    check_distinct(&header, timestamp.as_ref(), id.as_ref())?;
    let answer = match recipe.get("answer") {
        None | Some(Value::Null) => Answer::Queued,
        Some(v) => match v.as_u64() {
            Some(202) => Answer::Queued,
            Some(s @ (200 | 204)) => Answer::Empty(s as u16),
            _ => return err("answer", "must be 200, 202 or 204"),
        },
    };
    Ok(Scheme {
        name: "recipe".into(),
        check: Check::Mac {
            mac,
            key,
            at: SignatureAt {
                header,
                layout,
                encoding,
            },
            signed: Signed::Template(signed.to_string().into()),
            urls: UrlForms::Exact,
        },
        timestamp,
        tolerance_s: 300,
        id,
        id_fallback: None,
        id_required: false,
        alias: None,
        handshake: None,
        answer,
    })
}

/// A closed-choice string field: which of `names` it is (an index), or
/// `Ok(None)` when absent. One reader for every such field, driven by its
/// names, rather than a match and an error text per field (wasm bytes).
fn choice(
    fields: &Map<String, Value>,
    name: &str,
    what: &str,
    names: &[&str],
) -> Result<Option<usize>, RecipeError> {
    let Some(v) = string(fields, name)? else {
        return Ok(None);
    };
    match names.iter().position(|n| *n == v) {
        Some(i) => Ok(Some(i)),
        None => err(
            name,
            format!("unknown {what} '{v}'; expected {}", one_of(names)),
        ),
    }
}

/// `a, b or c`.
fn one_of(names: &[&str]) -> String {
    let (last, rest) = names.split_last().expect("a choice has names");
    format!("{} or {last}", rest.join(", "))
}

fn mac_of(recipe: &Map<String, Value>) -> Result<MacAlg, RecipeError> {
    const ALGS: [MacAlg; 3] = [MacAlg::Sha1, MacAlg::Sha256, MacAlg::Sha512];
    match choice(recipe, "hmac", "hash", &["sha1", "sha256", "sha512"])? {
        Some(i) => Ok(ALGS[i]),
        None => err("hmac", "is required: sha1, sha256 or sha512 (or write {\"token\": \"<header>\"} for a shared token)"),
    }
}

fn key_of(recipe: &Map<String, Value>) -> Result<KeyForm, RecipeError> {
    const FORMS: [KeyForm; 3] = [KeyForm::Raw, KeyForm::Base64, KeyForm::Whsec];
    let i = choice(recipe, "key", "key form", &["raw", "base64", "whsec"])?;
    Ok(FORMS[i.unwrap_or(0)])
}

fn encoding_of(recipe: &Map<String, Value>) -> Result<Encoding, RecipeError> {
    const ENCODINGS: [Encoding; 3] = [Encoding::Hex, Encoding::Base64, Encoding::Base64Url];
    match choice(
        recipe,
        "encoding",
        "encoding",
        &["hex", "base64", "base64url"],
    )? {
        Some(i) => Ok(ENCODINGS[i]),
        None => err("encoding", "is required: hex, base64 or base64url"),
    }
}

/// The template parses, what it signs can be read (`{id}` from a header),
/// and the timestamp is signed: one read from a header or the parts must
/// appear as `{timestamp}`, else its freshness check would read a value a
/// replayer may change at will (one in the body is signed with `{body}`,
/// which every template holds). `{timestamp}` with a `json` timestamp is
/// that value's text.
fn check_template(
    signed: &str,
    timestamp: Option<&Timestamp>,
    id: Option<&Place>,
) -> Result<(), RecipeError> {
    let pieces = template::parse(signed).map_err(|problem| RecipeError {
        field: "signed".into(),
        problem,
    })?;
    let uses = |piece| template::uses(&pieces, piece);
    match timestamp.map(|t| &t.at) {
        None if uses(Piece::Timestamp) => {
            return err(
                "signed",
                "uses {timestamp}, but the recipe has no \"timestamp\" to read it from",
            )
        }
        Some(Place::Header(_) | Place::Part) if !uses(Piece::Timestamp) => {
            return err(
                "signed",
                "does not sign {timestamp}, so its freshness check reads a value a replayer may change; put {timestamp} in the template, as the provider signs it",
            )
        }
        _ => {}
    }
    if uses(Piece::Id) && !matches!(id, Some(Place::Header(_))) {
        return err(
            "signed",
            "uses {id}, but the recipe has no \"id\": {\"header\": …} to read it from",
        );
    }
    Ok(())
}

fn token(recipe: &Map<String, Value>) -> Result<Scheme, RecipeError> {
    only(recipe, "", &["token"])?;
    let header = header_name(recipe, "token")?.ok_or_else(|| {
        error(
            "token",
            "must name the header that carries the shared token".into(),
        )
    })?;
    Ok(Scheme {
        name: "token".into(),
        check: Check::Token { header },
        timestamp: None,
        tolerance_s: 300,
        id: None,
        id_fallback: None,
        id_required: false,
        alias: None,
        handshake: None,
        answer: Answer::Queued,
    })
}

fn layout(recipe: &Map<String, Value>) -> Result<Layout, RecipeError> {
    let prefix = string(recipe, "prefix")?.unwrap_or_default();
    let separator = string(recipe, "separator")?;
    if separator == Some("") {
        return err("separator", "must not be empty");
    }
    let Some(parts) = recipe.get("parts") else {
        return Ok(Layout::Whole {
            prefix: prefix.to_string().into(),
            separator: separator.map(|s| s.to_string().into()),
        });
    };
    let Value::Object(parts) = parts else {
        return err(
            "parts",
            "must be an object {\"separator\", \"timestamp\", \"signature\"}",
        );
    };
    if !prefix.is_empty() || separator.is_some() {
        let field = if prefix.is_empty() {
            "separator"
        } else {
            "prefix"
        };
        return err(
            field,
            "does not apply with \"parts\": the parts name their own separator and keys",
        );
    }
    only(parts, "parts.", &["separator", "timestamp", "signature"])?;
    let part = |name: &str| -> Result<Text, RecipeError> {
        let field = format!("parts.{name}");
        match string(parts, name).map_err(|e| RecipeError {
            field: field.clone(),
            ..e
        })? {
            Some(v) if !v.is_empty() => Ok(v.to_string().into()),
            _ => err(&field, "is required and must not be empty"),
        }
    };
    Ok(Layout::Parts {
        separator: part("separator")?,
        timestamp: part("timestamp")?,
        signature: part("signature")?,
    })
}

fn timestamp(recipe: &Map<String, Value>, parts: bool) -> Result<Option<Timestamp>, RecipeError> {
    let Some(v) = recipe.get("timestamp").filter(|v| !v.is_null()) else {
        return Ok(parts.then_some(Timestamp {
            at: Place::Part,
            unit: TimeUnit::Seconds,
            canonical: false,
        }));
    };
    let Value::Object(fields) = v else {
        return err(
            "timestamp",
            "must be an object {\"header\"|\"json\": …, \"unit\": \"s\"|\"ms\"|\"rfc3339\"}",
        );
    };
    only(fields, "timestamp.", &["header", "json", "unit"])?;
    let unit = match fields.get("unit").and_then(Value::as_str) {
        Some("s") => TimeUnit::Seconds,
        Some("ms") => TimeUnit::Millis,
        Some("rfc3339") => TimeUnit::Rfc3339,
        _ => {
            return err(
                "timestamp.unit",
                "is required: \"s\", \"ms\" or \"rfc3339\"",
            )
        }
    };
    let at = if parts {
        part_timestamp(recipe, fields)?
    } else {
        place_in(fields, "timestamp")?
    };
    Ok(Some(Timestamp {
        at,
        unit,
        canonical: false,
    }))
}

/// With `parts`, the timestamp is a part: `timestamp` gives its unit, and
/// may repeat the signature's header (DESIGN §2), but names no other place.
fn part_timestamp(
    recipe: &Map<String, Value>,
    fields: &Map<String, Value>,
) -> Result<Place, RecipeError> {
    if fields.contains_key("json") {
        return err(
            "timestamp.json",
            "the timestamp is already one of the \"parts\"; give only its \"unit\"",
        );
    }
    if fields.contains_key("header") {
        let named = header_name(fields, "header").map_err(|e| RecipeError {
            field: "timestamp.header".into(),
            ..e
        })?;
        let signature = header_name(recipe, "header")?;
        if named != signature {
            return err(
                "timestamp.header",
                format!("the timestamp is one of the \"parts\" of the signature's header '{}'; name that header or none", signature.as_deref().unwrap_or("")),
            );
        }
    }
    Ok(Place::Part)
}

/// The signature, the timestamp and the id are three headers. One header
/// for two of them is refused: the timestamp's header cannot hold a
/// signature, and a timestamp or a signature taken as the delivery id
/// would make two events with the same one a duplicate of each other.
/// Found by the `recipe_config` fuzzer (`"id"` and `"timestamp"` both
/// `x-id`).
fn check_distinct(
    signature: &str,
    timestamp: Option<&Timestamp>,
    id: Option<&Place>,
) -> Result<(), RecipeError> {
    let ts = match timestamp.map(|t| &t.at) {
        Some(Place::Header(h)) => Some(h.as_ref()),
        _ => None,
    };
    let id = match id {
        Some(Place::Header(h)) => Some(h.as_ref()),
        _ => None,
    };
    if ts == Some(signature) {
        return err(
            "timestamp.header",
            format!(
                "'{signature}' is the signature's header; name the header the timestamp is sent in"
            ),
        );
    }
    if id.is_some() && (id == ts || id == Some(signature)) {
        let what = if id == ts { "timestamp" } else { "signature" };
        return err(
            "id.header",
            format!(
                "is the {what}'s header, which is no delivery id: two events would be taken as one"
            ),
        );
    }
    Ok(())
}

/// The characters a signature or a timestamp can hold: a separator made of
/// them would cut the value it separates.
fn may_hold(c: char, encoding: Encoding, unit: Option<TimeUnit>) -> bool {
    let in_signature = match encoding {
        Encoding::Hex => c.is_ascii_hexdigit(),
        Encoding::Base64 => c.is_ascii_alphanumeric() || "+/=".contains(c),
        Encoding::Base64Url => c.is_ascii_alphanumeric() || "-_=".contains(c),
    };
    let in_timestamp = match unit {
        None => false,
        Some(TimeUnit::Seconds | TimeUnit::Millis) => c.is_ascii_digit() || c == '-',
        Some(TimeUnit::Rfc3339) => c.is_ascii_alphanumeric() || "-:.+".contains(c),
    };
    in_signature || in_timestamp
}

/// A header laid out as the recipe says can be read back: no separator
/// cuts a signature, its prefix or a part's key, and no prefix holds the
/// whitespace that separates entries (or is trimmed off a header). Found by
/// the `recipe_config` fuzzer: `"separator": "0"` with hex was accepted and
/// then refused every request whose signature held a 0.
fn check_splits(
    layout: &Layout,
    encoding: Encoding,
    unit: Option<TimeUnit>,
) -> Result<(), RecipeError> {
    let cuts = |sep: &str, unit| sep.chars().any(|c| may_hold(c, encoding, unit));
    match layout {
        Layout::Whole { prefix, separator } => {
            if prefix.chars().any(|c| c.is_ascii_whitespace()) {
                return err(
                    "prefix",
                    "must not hold whitespace, which separates signatures",
                );
            }
            match separator {
                Some(sep) if cuts(sep, None) => err(
                    "separator",
                    format!("'{sep}' can occur inside a signature in this encoding; use a character it never holds, such as ',' or ' '"),
                ),
                Some(sep) if prefix.contains(sep.as_ref()) => err(
                    "separator",
                    format!("'{sep}' occurs in the prefix '{prefix}', which it would cut"),
                ),
                _ => Ok(()),
            }
        }
        Layout::Parts {
            separator,
            timestamp,
            signature,
        } => {
            if separator.contains('=') || cuts(separator, unit) {
                return err(
                    "parts.separator",
                    format!("'{separator}' can occur inside a part (key=value, a signature or a timestamp); use one such as ','"),
                );
            }
            for (field, key) in [
                ("parts.timestamp", timestamp),
                ("parts.signature", signature),
            ] {
                let bad = key.contains('=')
                    || key.contains(separator.as_ref())
                    || key.trim() != key.as_ref();
                if bad {
                    return err(
                        field,
                        format!(
                            "'{key}' must not hold '=', the separator or surrounding whitespace"
                        ),
                    );
                }
            }
            if timestamp == signature {
                return err("parts.signature", "must differ from parts.timestamp");
            }
            Ok(())
        }
    }
}

/// `{"header": …}` or `{"json": "<pointer>"}`, exactly one.
fn place(v: &Value, field: &str) -> Result<Place, RecipeError> {
    let Value::Object(fields) = v else {
        return err(
            field,
            "must be an object {\"header\": \"<name>\"} or {\"json\": \"/pointer\"}",
        );
    };
    only(fields, &format!("{field}."), &["header", "json"])?;
    place_in(fields, field)
}

/// The one of `header` or `json` in `fields` (their other keys checked by
/// the caller).
fn place_in(fields: &Map<String, Value>, field: &str) -> Result<Place, RecipeError> {
    match (fields.get("header"), fields.get("json")) {
        (Some(_), None) => {
            let named = header_name(fields, "header").map_err(|e| RecipeError {
                field: format!("{field}.header"),
                ..e
            })?;
            match named {
                Some(h) => Ok(Place::Header(h)),
                None => err(&format!("{field}.header"), "must be a header name"),
            }
        }
        (None, Some(Value::String(p))) if p.starts_with('/') => Ok(Place::Json(p.clone().into())),
        (None, Some(_)) => err(
            &format!("{field}.json"),
            "must be a JSON Pointer starting with '/', e.g. \"/event/id\"",
        ),
        _ => err(field, "must have exactly one of \"header\" or \"json\""),
    }
}

/// Refuses any field not in `known`.
fn only(fields: &Map<String, Value>, at: &str, known: &[&str]) -> Result<(), RecipeError> {
    match fields.keys().find(|k| !known.contains(&k.as_str())) {
        Some(unknown) => err(
            &format!("{at}{unknown}"),
            format!("unknown field; expected {}", known.join(", ")),
        ),
        None => Ok(()),
    }
}

fn string<'a>(fields: &'a Map<String, Value>, name: &str) -> Result<Option<&'a str>, RecipeError> {
    match fields.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => err(name, "must be a string"),
    }
}

/// A header name (an HTTP token), lower-cased.
fn header_name(fields: &Map<String, Value>, name: &str) -> Result<Option<Text>, RecipeError> {
    let Some(h) = string(fields, name)? else {
        return Ok(None);
    };
    let token = !h.is_empty()
        && h.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
    if !token {
        return err(name, format!("'{h}' is not a header name"));
    }
    Ok(Some(h.to_ascii_lowercase().into()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(v: Value) -> Result<Scheme, RecipeError> {
        parse(v.as_object().unwrap())
    }

    #[test]
    fn a_full_recipe_becomes_a_scheme() {
        let s = run(json!({
            "hmac": "sha512", "key": "base64", "header": "X-Acme-Signature", "prefix": "v1=",
            "encoding": "base64url", "separator": ",", "signed": "{timestamp}.{body}",
            "timestamp": {"header": "X-Acme-Time", "unit": "ms"}, "id": {"json": "/meta/id"}, "answer": 204
        }))
        .unwrap();
        let Check::Mac {
            mac,
            key,
            at,
            signed,
            ..
        } = &s.check
        else {
            panic!()
        };
        assert_eq!(
            (*mac, *key, at.encoding),
            (MacAlg::Sha512, KeyForm::Base64, Encoding::Base64Url)
        );
        assert_eq!(at.header, "x-acme-signature");
        assert_eq!(
            at.layout,
            Layout::Whole {
                prefix: "v1=".into(),
                separator: Some(",".into())
            }
        );
        assert_eq!(signed, &Signed::Template("{timestamp}.{body}".into()));
        assert_eq!(
            s.timestamp,
            Some(Timestamp {
                at: Place::Header("x-acme-time".into()),
                unit: TimeUnit::Millis,
                canonical: false
            })
        );
        assert_eq!(s.id, Some(Place::Json("/meta/id".into())));
        assert_eq!(s.answer, Answer::Empty(204));
    }

    #[test]
    fn a_parts_recipe_reads_its_timestamp_from_the_parts() {
        let s = run(json!({"hmac": "sha256", "header": "x-sig", "encoding": "hex",
            "parts": {"separator": ",", "timestamp": "t", "signature": "v1"}, "signed": "{timestamp}.{body}"}))
        .unwrap();
        assert_eq!(s.timestamp.unwrap().at, Place::Part);
    }

    #[test]
    fn a_timestamp_from_a_header_or_the_parts_must_be_signed() {
        let parts = json!({"separator": ",", "timestamp": "t", "signature": "v1"});
        #[rustfmt::skip]
        let table = vec![
            // The recipe: its freshness check read an unsigned header.
            (json!({"hmac": "sha256", "header": "x-sig", "encoding": "hex", "signed": "{body}",
                "timestamp": {"header": "X-Time", "unit": "s"}}), Some("signed")),
            (json!({"hmac": "sha256", "header": "x-sig", "encoding": "hex", "signed": "{body}",
                "parts": parts.clone()}), Some("signed")),
            (json!({"hmac": "sha256", "header": "x-sig", "encoding": "hex", "signed": "{body}",
                "parts": parts.clone(), "timestamp": {"unit": "ms"}}), Some("signed")),
            (json!({"hmac": "sha256", "header": "x-sig", "encoding": "hex", "signed": "{timestamp}.{body}",
                "timestamp": {"header": "X-Time", "unit": "s"}}), None),
            (json!({"hmac": "sha256", "header": "x-sig", "encoding": "hex", "signed": "{timestamp}.{body}",
                "parts": parts}), None),
            // A timestamp in the body is signed with the body.
            (json!({"hmac": "sha256", "header": "x-sig", "encoding": "hex", "signed": "{body}",
                "timestamp": {"json": "/sent_at", "unit": "s"}}), None),
        ];
        for (recipe, field) in table {
            let got = run(recipe.clone()).map(|_| ()).map_err(|e| e.field);
            assert_eq!(got.err().as_deref(), field, "{recipe}");
        }
    }

    #[test]
    fn a_json_timestamp_may_be_signed_as_its_text() {
        let s = run(
            json!({"hmac": "sha256", "header": "x-sig", "encoding": "hex",
            "signed": "{method} {url}\n{timestamp}\n{body}",
            "timestamp": {"json": "/meta/sent_at", "unit": "rfc3339"}}),
        )
        .unwrap();
        assert_eq!(s.timestamp.unwrap().at, Place::Json("/meta/sent_at".into()));
    }

    #[test]
    fn a_parts_recipe_may_repeat_the_signature_header_as_its_timestamp_header() {
        let recipe = |ts: Value| {
            json!({"hmac": "sha256", "header": "X-Parts-Sig", "encoding": "hex",
                "parts": {"separator": ",", "timestamp": "t", "signature": "v1"},
                "signed": "{timestamp}.{body}", "timestamp": ts})
        };
        #[rustfmt::skip]
        let table = [
            (recipe(json!({"header": "X-Parts-Sig", "unit": "s"})), None),
            (recipe(json!({"header": "x-parts-sig", "unit": "ms"})), None),
            (recipe(json!({"unit": "s"})), None),
            (recipe(json!({"header": "X-Time", "unit": "s"})), Some("timestamp.header")),
            (recipe(json!({"header": "x parts", "unit": "s"})), Some("timestamp.header")),
            (recipe(json!({"json": "/t", "unit": "s"})), Some("timestamp.json")),
        ];
        for (recipe, field) in table {
            let got = run(recipe.clone()).map(|s| s.timestamp.unwrap().at);
            match field {
                None => assert_eq!(got, Ok(Place::Part), "{recipe}"),
                Some(f) => assert_eq!(got.unwrap_err().field, f, "{recipe}"),
            }
        }
    }

    #[test]
    fn a_token_recipe_names_its_header() {
        let s = run(json!({"token": "X-Hook-Token"})).unwrap();
        assert_eq!(
            s.check,
            Check::Token {
                header: "x-hook-token".into()
            }
        );
    }

    fn ok() -> Value {
        json!({"hmac": "sha256", "header": "x-sig", "encoding": "hex", "signed": "{body}"})
    }

    fn with(k: &str, v: Value) -> Value {
        let mut o = ok();
        o[k] = v;
        o
    }

    fn without(k: &str) -> Value {
        let mut o = ok();
        o.as_object_mut().unwrap().remove(k);
        o
    }

    fn assert_fields(table: Vec<(Value, &str)>) {
        for (recipe, field) in table {
            let got = run(recipe.clone()).map(|_| ()).unwrap_err();
            assert_eq!(got.field, field, "{recipe}: {got:?}");
        }
    }

    #[test]
    fn each_bad_top_level_field_is_named() {
        let mut parts_and_prefix = with("prefix", json!("v1="));
        parts_and_prefix["parts"] = json!({"separator": ",", "timestamp": "t", "signature": "v1"});
        #[rustfmt::skip]
        let table = vec![
            (with("hmac", json!("md5")), "hmac"),
            (without("hmac"), "hmac"),
            (with("key", json!("hex")), "key"),
            (without("header"), "header"),
            (with("header", json!("x sig")), "header"),
            (with("encoding", json!("base32")), "encoding"),
            (without("encoding"), "encoding"),
            (with("encoding", json!(1)), "encoding"),
            (without("signed"), "signed"),
            (with("signed", json!("{bdoy}")), "signed"),
            (with("signed", json!("{timestamp}.{body}")), "signed"),
            (with("signed", json!("{id}.{body}")), "signed"),
            (with("separator", json!("")), "separator"),
            (with("answer", json!(201)), "answer"),
            (with("typo", json!(1)), "typo"),
            (parts_and_prefix, "prefix"),
            (json!({"token": "x-t", "header": "x"}), "header"),
            (json!({"token": ""}), "token"),
        ];
        assert_fields(table);
    }

    #[test]
    fn each_bad_nested_field_is_named() {
        #[rustfmt::skip]
        let table = vec![
            (with("timestamp", json!({"header": "x-t"})), "timestamp.unit"),
            (with("timestamp", json!({"header": "x-t", "unit": "h"})), "timestamp.unit"),
            (with("timestamp", json!({"unit": "s"})), "timestamp"),
            (with("timestamp", json!({"header": "x-t", "json": "/t", "unit": "s"})), "timestamp"),
            (with("timestamp", json!({"header": "x-t", "unit": "s", "zone": 1})), "timestamp.zone"),
            (with("id", json!({"json": "id"})), "id.json"),
            (with("id", json!({"header": ""})), "id.header"),
            (with("id", json!({"header": null})), "id.header"),
            (with("timestamp", json!({"header": null, "unit": "s"})), "timestamp.header"),
            (with("id", json!("x-id")), "id"),
            (with("parts", json!({"separator": ",", "timestamp": "t"})), "parts.signature"),
            (with("parts", json!({"separator": ",", "timestamp": "t", "signature": "v1", "x": 1})), "parts.x"),
            (with("parts", json!([])), "parts"),
        ];
        assert_fields(table);
    }
}

#[cfg(test)]
mod split_tests {
    use super::*;
    use crate::signature::{sign, verify, Request, SignInput, SigningKey};
    use serde_json::json;

    fn run(v: Value) -> Result<Scheme, RecipeError> {
        parse(v.as_object().unwrap())
    }

    #[test]
    fn a_separator_or_prefix_that_would_cut_a_signature_is_refused() {
        let hex =
            json!({"hmac": "sha256", "header": "x-sig", "encoding": "hex", "signed": "{body}"});
        let with = |fields: Value| {
            let mut r = hex.clone();
            for (k, v) in fields.as_object().unwrap() {
                r[k] = v.clone();
            }
            r
        };
        let parts = |sep: &str, ts: &str, sig: &str| {
            with(
                json!({"parts": {"separator": sep, "timestamp": ts, "signature": sig}, "signed": "{timestamp}.{body}"}),
            )
        };
        let table = [
            // The fuzzer's find, minimized: hex holds 0.
            (with(json!({"separator": "0"})), Some("separator")),
            (
                with(json!({"separator": "=", "encoding": "base64"})),
                Some("separator"),
            ),
            (
                with(json!({"separator": "-", "encoding": "base64url"})),
                Some("separator"),
            ),
            (
                with(json!({"separator": ",", "prefix": "v1,"})),
                Some("separator"),
            ),
            (with(json!({"prefix": "v1 "})), Some("prefix")),
            (parts("=", "t", "v1"), Some("parts.separator")),
            (parts("1", "t", "v1"), Some("parts.separator")),
            (parts(",", "t=", "v1"), Some("parts.timestamp")),
            (parts(";", "t", "v;1"), Some("parts.signature")),
            (parts(",", " t", "v1"), Some("parts.timestamp")),
            (parts(",", "v1", "v1"), Some("parts.signature")),
            // What the providers use stays accepted.
            (with(json!({"separator": ",", "prefix": "sha256="})), None),
            (
                with(json!({"separator": " ", "prefix": "v1,", "encoding": "base64"})),
                None,
            ),
            (parts(",", "t", "v1"), None),
        ];
        for (recipe, field) in table {
            let got = run(recipe.clone()).map(|_| ()).map_err(|e| e.field);
            assert_eq!(got.err().as_deref(), field, "{recipe}");
        }
    }

    #[test]
    fn one_header_for_two_of_signature_timestamp_and_id_is_refused() {
        let with = |fields: Value| {
            let mut r =
                json!({"hmac": "sha256", "header": "x-sig", "encoding": "hex", "signed": "{body}"});
            for (k, v) in fields.as_object().unwrap() {
                r[k] = v.clone();
            }
            r
        };
        let table = [
            // The fuzzer's second find: one header for two things.
            (
                with(
                    json!({"timestamp": {"header": "x-id", "unit": "ms"}, "id": {"header": "x-id"}, "signed": "{timestamp}.{body}"}),
                ),
                Some("id.header"),
            ),
            (with(json!({"id": {"header": "x-sig"}})), Some("id.header")),
            (
                with(
                    json!({"timestamp": {"header": "x-sig", "unit": "s"}, "signed": "{timestamp}.{body}"}),
                ),
                Some("timestamp.header"),
            ),
            (
                with(
                    json!({"timestamp": {"header": "x-ts", "unit": "s"}, "id": {"header": "x-id"}, "signed": "{timestamp}.{body}"}),
                ),
                None,
            ),
        ];
        for (recipe, field) in table {
            let got = run(recipe.clone()).map(|_| ()).map_err(|e| e.field);
            assert_eq!(got.err().as_deref(), field, "{recipe}");
        }
    }

    #[test]
    fn an_accepted_separator_never_cuts_the_signature_it_separates() {
        // Before the check, "0" with hex was accepted and then refused any
        // request whose signature held a 0 (most of them).
        for encoding in ["hex", "base64", "base64url"] {
            for sep in [",", " ", ";", "|", "0", "a", "=", "+", "-", "_"] {
                let recipe = json!({"hmac": "sha256", "header": "x-sig", "encoding": encoding, "separator": sep, "signed": "{body}"});
                let Ok(scheme) = run(recipe) else { continue };
                let key = SigningKey::from_secret(scheme.key_form(), "a secret").unwrap();
                for n in 0..16 {
                    let body = format!("{{\"n\":{n}}}");
                    let body = body.as_bytes();
                    let input = SignInput {
                        method: "POST",
                        url: "",
                        body,
                        form: false,
                        id: None,
                        timestamp: None,
                    };
                    let sig = sign(&scheme, &key, &input).unwrap();
                    let headers = [("x-sig", sig.as_str())];
                    let req = Request {
                        method: "POST",
                        url: "",
                        headers: &headers[..],
                        body,
                        form: false,
                    };
                    let verdict = verify(&scheme, std::slice::from_ref(&key), &req, 0, 0);
                    assert!(
                        verdict.is_ok(),
                        "{encoding} with separator {sep:?}: {sig} refused"
                    );
                }
            }
        }
    }
}
