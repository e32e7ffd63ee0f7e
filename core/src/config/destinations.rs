//! `DESTINATIONS` (DESIGN §1, §3): where routes send events, by name. This
//! version has URL destinations only; `queue`, `service` and `auth` are
//! refused as not supported yet, never accepted and ignored.

use super::env::{fail, object_var, ConfigEnv, ConfigError, FieldError};
use super::sources::{is_http_url, is_valid_name};
use serde_json::{Map, Value};

/// A destination: a URL that gets the signed POST.
#[derive(Debug, Clone, PartialEq)]
pub struct Destination {
    /// Its name (the key of the breaker, parking, stats and alarms).
    pub name: String,
    /// `url`: where the signed POST goes.
    pub url: String,
    /// `rate_per_s` (0.1-100): the most calls it takes per second;
    /// `None`: no rate of its own.
    pub rate_per_s: Option<f64>,
    /// `timeout_ms` (100-120000), else `DELIVERY_TIMEOUT_MS`.
    pub timeout_ms: u32,
}

/// The range a call's timeout may take (`DELIVERY_TIMEOUT_MS`, and a
/// destination's `timeout_ms`), in ms. Here, beside the destination that
/// carries it, so `delivery.rs` reads it from this file and never the reverse.
pub const DELIVERY_TIMEOUT_RANGE_MS: std::ops::RangeInclusive<u64> = 100..=120_000;

const KEY: &str = "DESTINATIONS";
const FIELDS: [&str; 3] = ["url", "rate_per_s", "timeout_ms"];
/// Specified by DESIGN §3, built in a later version.
const NOT_YET: [&str; 3] = ["queue", "service", "auth"];

/// Reads `DESTINATIONS`, which is optional (absent: none declared), in
/// name order; `default_timeout_ms` is `DELIVERY_TIMEOUT_MS`.
pub fn load_destinations(
    env: &impl ConfigEnv,
    default_timeout_ms: u32,
) -> Result<Vec<Destination>, ConfigError> {
    match env.get(KEY) {
        None => Ok(Vec::new()),
        Some(raw) => parse_destinations(&raw, default_timeout_ms),
    }
}

/// Parses `DESTINATIONS`: a JSON object, or a JSON string holding one.
pub fn parse_destinations(
    raw: &Value,
    default_timeout_ms: u32,
) -> Result<Vec<Destination>, ConfigError> {
    let object = object_var(KEY, raw, "destination name to {\"url\": …}")?;
    // A JSON object's keys come sorted, so the list is in name order. A
    // loop, not `collect` into a `Result` (a second copy of the parser in
    // wasm).
    let mut out = Vec::with_capacity(object.len());
    for (name, decl) in object.iter() {
        match destination(name, decl, default_timeout_ms) {
            Ok(d) => out.push(d),
            Err((field, problem)) => {
                return Err(ConfigError::new(format!("{KEY}.{name}{field}"), problem))
            }
        }
    }
    check_secret_names(&out)?;
    Ok(out)
}

impl Destination {
    /// What its secrets' names end with (DESIGN §1,
    /// `DESTINATION_SECRET_<NAME>`, `DESTINATION_SIGNING_SECRET_<NAME>`):
    /// the name upper-cased, `-` as `_`.
    pub fn secret_suffix(&self) -> String {
        self.name.to_ascii_uppercase().replace('-', "_")
    }
}

/// Two destinations whose secrets would share a binding (`a-b` and `a_b`)
/// cannot each have their own: refused, naming both. Both secrets end
/// with the same suffix, so they collide together or not at all; the two
/// prefixes never produce each other's names (`SECRET_…` against
/// `SIGNING_SECRET_…`), and destinations have no `_PREVIOUS` secret.
fn check_secret_names(destinations: &[Destination]) -> Result<(), ConfigError> {
    for (i, d) in destinations.iter().enumerate() {
        let suffix = d.secret_suffix();
        if let Some(other) = destinations[..i]
            .iter()
            .find(|o| o.secret_suffix() == suffix)
        {
            return Err(ConfigError::new(
                format!("{KEY}.{}", d.name),
                format!("its secrets DESTINATION_SECRET_{suffix} and DESTINATION_SIGNING_SECRET_{suffix} are also destination '{}''s (names are upper-cased and '-' becomes '_'); rename one of the two destinations", other.name),
            ));
        }
    }
    Ok(())
}

fn destination(
    name: &str,
    decl: &Value,
    default_timeout_ms: u32,
) -> Result<Destination, FieldError> {
    if !is_valid_name(name) {
        return fail(
            "",
            "a destination name must be 1-64 characters of a-z, 0-9, '-' or '_'",
        );
    }
    let Value::Object(fields) = decl else {
        return fail("", "must be an object such as {\"url\": \"https://…\"}");
    };
    if let Some(field) = fields.keys().find(|f| NOT_YET.contains(&f.as_str())) {
        return fail(
            &format!(".{field}"),
            "is not supported in this version yet: a destination is {\"url\": …} with optional rate_per_s and timeout_ms",
        );
    }
    if let Some(field) = fields.keys().find(|f| !FIELDS.contains(&f.as_str())) {
        return fail(
            &format!(".{field}"),
            format!("unknown field; expected {}", FIELDS.join(", ")),
        );
    }
    let url = match fields.get("url") {
        Some(Value::String(url)) if is_http_url(url) => url.clone(),
        Some(_) => return fail(".url", "must be an http:// or https:// URL"),
        None => {
            return fail(
                ".url",
                "is required: the http:// or https:// URL events are POSTed to",
            )
        }
    };
    Ok(Destination {
        name: name.to_string(),
        url,
        rate_per_s: rate_of(fields)?,
        timeout_ms: timeout_of(fields, default_timeout_ms)?,
    })
}

fn rate_of(fields: &Map<String, Value>) -> Result<Option<f64>, FieldError> {
    match fields.get("rate_per_s") {
        None | Some(Value::Null) => Ok(None),
        Some(v) => match v.as_f64().filter(|r| (0.1..=100.0).contains(r)) {
            Some(r) => Ok(Some(r)),
            None => fail(
                ".rate_per_s",
                "must be a number of calls per second from 0.1 to 100",
            ),
        },
    }
}

fn timeout_of(fields: &Map<String, Value>, default_ms: u32) -> Result<u32, FieldError> {
    match fields.get("timeout_ms") {
        None | Some(Value::Null) => Ok(default_ms),
        Some(v) => match v.as_u64().filter(|t| DELIVERY_TIMEOUT_RANGE_MS.contains(t)) {
            Some(t) => Ok(t as u32),
            None => fail(
                ".timeout_ms",
                "must be a whole number of milliseconds from 100 to 120000",
            ),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn destinations_are_read_from_an_object_or_a_json_string_with_defaults() {
        let object = json!({"billing": {"url": "https://billing.example/hook", "rate_per_s": 2.5, "timeout_ms": 3000}, "analytics": {"url": "http://127.0.0.1:9/a"}});
        let parsed = parse_destinations(&object, 10_000).unwrap();
        assert_eq!(
            parse_destinations(&json!(object.to_string()), 10_000).unwrap(),
            parsed
        );
        assert_eq!(
            parsed,
            [
                Destination {
                    name: "analytics".into(),
                    url: "http://127.0.0.1:9/a".into(),
                    rate_per_s: None,
                    timeout_ms: 10_000,
                },
                Destination {
                    name: "billing".into(),
                    url: "https://billing.example/hook".into(),
                    rate_per_s: Some(2.5),
                    timeout_ms: 3000,
                },
            ]
        );
        let absent = std::collections::BTreeMap::<String, Value>::new();
        assert_eq!(load_destinations(&absent, 10_000).unwrap(), []);
        assert_eq!(parse_destinations(&json!({}), 10_000).unwrap(), []);
    }

    #[test]
    fn colliding_secret_names_are_a_configuration_error() {
        let url = json!({"url": "https://x.example/h"});
        let table = [
            (
                json!({"a-b": url, "a_b": url}),
                Some(("DESTINATIONS.a_b", "'a-b'", "A_B")),
            ),
            (
                json!({"crm-eu": url, "billing": url, "crm_eu": url}),
                Some(("DESTINATIONS.crm_eu", "'crm-eu'", "CRM_EU")),
            ),
            (json!({"ab": url, "a-b": url}), None),
            // Destinations have no _PREVIOUS secret, and the two prefixes
            // never make each other's names.
            (json!({"acme": url, "acme-previous": url}), None),
            (json!({"foo": url, "signing-secret-foo": url}), None),
        ];
        for (raw, want) in table {
            let got = parse_destinations(&raw, 10_000);
            match want {
                None => assert!(got.is_ok(), "{raw}: {got:?}"),
                Some((key, other, suffix)) => {
                    let err = got.unwrap_err();
                    assert_eq!(err.key, key, "{raw}");
                    for part in [
                        other,
                        "rename one",
                        &format!("DESTINATION_SECRET_{suffix} "),
                        &format!("DESTINATION_SIGNING_SECRET_{suffix} "),
                    ] {
                        assert!(err.problem.contains(part), "{raw}: {}", err.problem);
                    }
                }
            }
        }
    }

    #[test]
    fn a_bad_destination_names_its_path() {
        let url = "https://x.example/h";
        let table = [
            (json!(42), "DESTINATIONS", "must be a JSON object"),
            (json!("{not json"), "DESTINATIONS", "not JSON"),
            (json!("[1]"), "DESTINATIONS", "must be a JSON object"),
            (
                json!({"Bad Name": {"url": url}}),
                "DESTINATIONS.Bad Name",
                "1-64 characters",
            ),
            (json!({"b": url}), "DESTINATIONS.b", "must be an object"),
            (json!({"b": {}}), "DESTINATIONS.b.url", "is required"),
            (
                json!({"b": {"url": "ftp://x"}}),
                "DESTINATIONS.b.url",
                "http://",
            ),
            (
                json!({"b": {"url": url, "method": "PUT"}}),
                "DESTINATIONS.b.method",
                "unknown field",
            ),
            (
                json!({"b": {"url": url, "rate_per_s": 0.05}}),
                "DESTINATIONS.b.rate_per_s",
                "0.1 to 100",
            ),
            (
                json!({"b": {"url": url, "rate_per_s": 101}}),
                "DESTINATIONS.b.rate_per_s",
                "0.1 to 100",
            ),
            (
                json!({"b": {"url": url, "rate_per_s": "5"}}),
                "DESTINATIONS.b.rate_per_s",
                "0.1 to 100",
            ),
            (
                json!({"b": {"url": url, "timeout_ms": 99}}),
                "DESTINATIONS.b.timeout_ms",
                "100 to 120000",
            ),
            (
                json!({"b": {"url": url, "timeout_ms": 120_001}}),
                "DESTINATIONS.b.timeout_ms",
                "100 to 120000",
            ),
            (
                json!({"b": {"url": url, "timeout_ms": 1.5}}),
                "DESTINATIONS.b.timeout_ms",
                "100 to 120000",
            ),
        ];
        for (raw, key, fragment) in table {
            let err = parse_destinations(&raw, 10_000).unwrap_err();
            assert_eq!(err.key, key, "{raw}: {err}");
            assert!(err.problem.contains(fragment), "{raw}: {err}");
        }
    }

    #[test]
    fn queue_service_and_auth_are_refused_as_not_supported_yet_never_ignored() {
        let table = [
            (json!({"q": {"queue": "JOBS"}}), "DESTINATIONS.q.queue"),
            (
                json!({"s": {"service": "BILLING"}}),
                "DESTINATIONS.s.service",
            ),
            (
                json!({"a": {"url": "https://x.example/h", "auth": "bearer"}}),
                "DESTINATIONS.a.auth",
            ),
        ];
        for (raw, key) in table {
            let err = parse_destinations(&raw, 10_000).unwrap_err();
            assert_eq!(err.key, key, "{raw}");
            assert!(
                err.problem.contains("not supported in this version yet"),
                "{err}"
            );
        }
    }
}
