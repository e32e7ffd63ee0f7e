//! `SOURCES`: the declared webhook sources, and the secret each one needs.

use crate::route::routes::{parse_routes, Route};
use crate::signature::{preset, preset_names, recipe, Check, PublicKeyAlg, Scheme, SigningKey};
use crate::support::env::{
    fail, is_http_url, is_valid_name, object_var, text, ConfigEnv, ConfigError, FieldError,
};
use serde_json::Value;

/// Default timestamp tolerance, either way, in seconds, for the older
/// schemes and recipes (a preset carries its own).
pub const DEFAULT_TOLERANCE_S: u32 = 300;

/// One source as declared in `SOURCES`, before its secret is bound.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceSpec {
    /// The name in `/webhooks/{source}`.
    pub name: String,
    /// Its signature scheme: a preset's, or the recipe's.
    pub scheme: Scheme,
    /// Allowed timestamp skew either way, in seconds: `tolerance_s`, else
    /// the scheme's.
    pub tolerance_s: u32,
    /// `url`: the URL as configured at the provider, which `{url}` signs
    /// (for a relay behind a proxy or a second hostname); `None` signs the
    /// URL as received.
    pub url: Option<String>,
    /// `public_key`: the provider's public key, for the public-key schemes.
    pub public_key: Option<String>,
    /// `downstream`: the shorthand for one unfiltered route to a URL
    /// destination named after the source.
    pub downstream: Option<String>,
    /// `routes`, as declared (their destinations are checked against
    /// `DESTINATIONS` by `DeliveryConfig::load`); empty with `downstream`.
    pub routes: Vec<Route>,
    /// `expect_every`: the `source_silent` alarm fires when nothing arrived
    /// from this source for this long (milliseconds); `None` never alarms.
    pub expect_every_ms: Option<i64>,
}

impl SourceSpec {
    /// The secret binding that holds this source's key: `WEBHOOK_SECRET_`
    /// and the name upper-cased with `-` as `_`.
    pub fn secret_name(&self) -> String {
        secret_name(&self.name)
    }

    /// Whether the source is keyed by a secret (the public-key schemes
    /// are keyed by `public_key` instead).
    pub fn needs_secret(&self) -> bool {
        !matches!(self.scheme.check, Check::PublicKey { .. })
    }
}

/// The suffix of the secret accepted beside the current one while rotating.
pub const PREVIOUS_SUFFIX: &str = "_PREVIOUS";

/// The secret binding name for a source name.
pub fn secret_name(source: &str) -> String {
    format!(
        "WEBHOOK_SECRET_{}",
        source.to_ascii_uppercase().replace('-', "_")
    )
}

/// A configured source with its keys bound.
#[derive(Debug, Clone)]
pub struct Source {
    /// The declaration.
    pub spec: SourceSpec,
    /// Its keys: the current secret's, then `_PREVIOUS`'s when set. Empty
    /// for a public-key scheme.
    pub keys: Vec<SigningKey>,
    /// The decoded `public_key`, for a public-key scheme: 32 raw bytes for
    /// Ed25519, the SPKI DER for ECDSA P-256.
    pub public_key: Option<Vec<u8>>,
}

/// Binds a source's keys: its secret (and `_PREVIOUS`, when set) read
/// through `env`, or its decoded `public_key`.
fn bind(spec: SourceSpec, env: &impl ConfigEnv) -> Result<Source, ConfigError> {
    if let Check::PublicKey { alg, .. } = &spec.scheme.check {
        let public_key = spec
            .public_key
            .as_deref()
            .and_then(|text| decode_public_key(*alg, text))
            .expect("parse_source checked the public key");
        return Ok(Source {
            spec,
            keys: Vec::new(),
            public_key: Some(public_key),
        });
    }
    let current = spec.secret_name();
    let secret = text(env, &current).filter(|s| !s.is_empty()).ok_or_else(|| {
        ConfigError::new(
            &current,
            format!("is not set; source '{}' cannot verify signatures without it. Set it with `wrangler secret put {current}` (or in .dev.vars locally)", spec.name),
        )
    })?;
    let form = spec.scheme.key_form();
    let mut keys = vec![SigningKey::from_secret(form, &secret)
        .map_err(|problem| ConfigError::new(&current, problem))?];
    let previous = format!("{current}{PREVIOUS_SUFFIX}");
    if let Some(old) = text(env, &previous).filter(|s| !s.is_empty()) {
        keys.push(
            SigningKey::from_secret(form, &old)
                .map_err(|problem| ConfigError::new(&previous, problem))?,
        );
    }
    Ok(Source {
        spec,
        keys,
        public_key: None,
    })
}

/// The configured sources, in name order. A relay has a handful, so they
/// are a list looked up by name: a map keyed by name costs both workers
/// its own copy of the map code.
#[derive(Debug, Clone, Default)]
pub struct Sources(Vec<Source>);

impl Sources {
    /// Binds each declared source to its secrets, in name order (`specs`
    /// are a JSON object's keys, read sorted).
    pub fn bind(specs: &[SourceSpec], env: &impl ConfigEnv) -> Result<Sources, ConfigError> {
        let mut sources = Vec::with_capacity(specs.len());
        for spec in specs.iter().cloned() {
            sources.push(bind(spec, env)?);
        }
        Ok(Sources(sources))
    }

    /// The source named `name`.
    pub fn get(&self, name: &str) -> Option<&Source> {
        self.0.iter().find(|s| s.spec.name == name)
    }

    /// Whether a source is named `name`.
    pub fn contains_key(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    /// The names, in order.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(|s| s.spec.name.as_str())
    }

    /// Every source, in order.
    pub fn values(&self) -> impl Iterator<Item = &Source> {
        self.0.iter()
    }

    /// How many there are.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Parses `SOURCES`: a JSON object, or a JSON string holding one (so that
/// `wrangler dev --var SOURCES:'{…}'` works).
pub fn parse_sources(raw: &Value) -> Result<Vec<SourceSpec>, ConfigError> {
    const KEY: &str = "SOURCES";
    let object = object_var(KEY, raw, "source name to {\"scheme\": …}")?;
    // An empty object is valid: a deployment before its first source (the
    // committed wrangler.toml ships so) answers 404 to every source.
    let specs = object
        .iter()
        .map(|(name, decl)| parse_source(name, decl))
        .collect::<Result<Vec<_>, _>>()?;
    check_secret_names(&specs)?;
    Ok(specs)
}

/// Two sources whose secrets would share a binding (`a-b` and `a_b`, or
/// `acme`'s `_PREVIOUS` and a source named `acme-previous`) cannot both
/// be keyed: refused, naming both.
fn check_secret_names(specs: &[SourceSpec]) -> Result<(), ConfigError> {
    let mut taken: Vec<(String, &str)> = Vec::new();
    for spec in specs {
        let current = spec.secret_name();
        let previous = format!("{current}{PREVIOUS_SUFFIX}");
        for name in [current, previous] {
            if let Some((_, other)) = taken.iter().find(|(n, _)| *n == name) {
                return Err(ConfigError::new(
                    format!("SOURCES.{}", spec.name),
                    format!("its secret {name} is also source '{other}''s (names are upper-cased and '-' becomes '_', and each source may have a _PREVIOUS secret); rename one of the two sources"),
                ));
            }
            taken.push((name, &spec.name));
        }
    }
    Ok(())
}

fn parse_source(name: &str, decl: &Value) -> Result<SourceSpec, ConfigError> {
    // Every problem names its field relative to the source; the key is
    // built here, once, rather than at each field's error (wasm bytes).
    source_fields(name, decl)
        .map_err(|(field, problem)| ConfigError::new(format!("SOURCES.{name}{field}"), problem))
}

fn source_fields(name: &str, decl: &Value) -> Result<SourceSpec, FieldError> {
    if !is_valid_name(name) {
        return fail(
            "",
            "a source name must be 1-64 characters of a-z, 0-9, '-' or '_'",
        );
    }
    let Value::Object(fields) = decl else {
        return fail("", "must be an object such as {\"scheme\": \"stripe\"}");
    };
    if let Some(field) = fields.keys().find(|f| !FIELDS.contains(&f.as_str())) {
        return fail(
            &format!(".{field}"),
            format!("unknown field; expected {}", FIELDS.join(", ")),
        );
    }
    let scheme = scheme_of(fields)?;
    let tolerance_s = tolerance_of(fields, &scheme)?;
    let downstream = url_of(fields, "downstream", "must be an http:// or https:// URL")?;
    let routes = match fields.get("routes") {
        None | Some(Value::Null) => Vec::new(),
        Some(_) if downstream.is_some() => return fail(
            ".downstream",
            "cannot be given beside routes: downstream is the shorthand for one unfiltered route to a destination named after the source; list that destination in routes instead",
        ),
        Some(raw) => parse_routes(raw)?,
    };
    let url = url_of(
        fields,
        "url",
        "must be the http:// or https:// URL as configured at the provider",
    )?;
    let public_key = public_key_of(fields, &scheme)?;
    Ok(SourceSpec {
        name: name.to_string(),
        scheme,
        tolerance_s,
        url,
        public_key,
        downstream,
        routes,
        expect_every_ms: expect_every_of(fields)?,
    })
}

/// `tolerance_s`, else the scheme's.
fn tolerance_of(
    fields: &serde_json::Map<String, Value>,
    scheme: &Scheme,
) -> Result<u32, FieldError> {
    match fields.get("tolerance_s") {
        None => Ok(scheme.tolerance_s),
        Some(v) => match v.as_u64().filter(|t| (1..=86_400).contains(t)) {
            Some(t) => Ok(t as u32),
            None => fail(
                ".tolerance_s",
                "must be a whole number of seconds from 1 to 86400",
            ),
        },
    }
}

/// An optional http(s) URL field.
fn url_of(
    fields: &serde_json::Map<String, Value>,
    field: &str,
    problem: &str,
) -> Result<Option<String>, FieldError> {
    match fields.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(url)) if is_http_url(url) => Ok(Some(url.clone())),
        Some(_) => fail(&format!(".{field}"), problem),
    }
}

/// `expect_every`, a duration with a unit such as `6h`; absent or null is
/// no expectation.
fn expect_every_of(fields: &serde_json::Map<String, Value>) -> Result<Option<i64>, FieldError> {
    const AT: &str = ".expect_every";
    match fields.get("expect_every") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(raw)) => match crate::support::duration::parse_duration_ms(raw) {
            Ok(ms) => Ok(Some(ms)),
            Err(problem) => fail(AT, problem),
        },
        Some(_) => fail(
            AT,
            "must be a duration string with a unit, e.g. \"6h\" or \"30m\"",
        ),
    }
}

const FIELDS: [&str; 7] = [
    "scheme",
    "tolerance_s",
    "url",
    "public_key",
    "downstream",
    "routes",
    "expect_every",
];

/// A preset's name, or a recipe object.
fn scheme_of(fields: &serde_json::Map<String, Value>) -> Result<Scheme, FieldError> {
    const AT: &str = ".scheme";
    match fields.get("scheme") {
        Some(Value::String(s)) => match preset(s) {
            Some(p) => Ok(p.clone()),
            None => fail(
                AT,
                format!(
                    "unknown preset '{s}'; expected one of {}, or a recipe object",
                    preset_names()
                ),
            ),
        },
        Some(Value::Object(recipe)) => {
            recipe::parse(recipe).map_err(|e| (format!("{AT}.{}", e.field), e.problem))
        }
        _ => fail(
            AT,
            format!(
                "is required: a preset ({}) or a recipe object",
                preset_names()
            ),
        ),
    }
}

/// `public_key`: required by the public-key schemes, refused by the others.
fn public_key_of(
    fields: &serde_json::Map<String, Value>,
    scheme: &Scheme,
) -> Result<Option<String>, FieldError> {
    const AT: &str = ".public_key";
    let alg = match &scheme.check {
        Check::PublicKey { alg, .. } => Some(*alg),
        _ => None,
    };
    match (fields.get("public_key"), alg) {
        (None | Some(Value::Null), None) => Ok(None),
        (Some(_), None) => fail(
            AT,
            format!("scheme {} is keyed by the secret {{WEBHOOK_SECRET_…}}, not a public key; remove public_key", scheme.name),
        ),
        (Some(Value::String(text)), Some(alg)) => match decode_public_key(alg, text) {
            Some(_) => Ok(Some(text.clone())),
            None => fail(AT, public_key_form(alg)),
        },
        (_, Some(alg)) => fail(
            AT,
            format!("is required by scheme {}: {}", scheme.name, public_key_form(alg)),
        ),
    }
}

fn public_key_form(alg: PublicKeyAlg) -> &'static str {
    match alg {
        PublicKeyAlg::Ed25519 => "must be the application's Ed25519 public key as 64 hex digits",
        PublicKeyAlg::EcdsaP256 => {
            "must be the verification key as base64 of its SPKI (DER), as the provider shows it"
        }
    }
}

/// A public key's bytes: 32 raw bytes for Ed25519, the SPKI DER for
/// ECDSA P-256.
pub fn decode_public_key(alg: PublicKeyAlg, text: &str) -> Option<Vec<u8>> {
    let text = text.trim();
    match alg {
        PublicKeyAlg::Ed25519 => hex::decode(text).ok().filter(|k| k.len() == 32),
        // A P-256 SPKI is 91 bytes; starting with a SEQUENCE is enough to
        // refuse a pasted secret or a PEM, and WebCrypto checks the rest.
        PublicKeyAlg::EcdsaP256 => crate::support::base64::STANDARD
            .decode(text)
            .ok()
            .filter(|k| k.len() == 91 && k[0] == 0x30),
    }
}

/// Reads `SOURCES`, which is required.
pub fn load_sources(env: &impl ConfigEnv) -> Result<Vec<SourceSpec>, ConfigError> {
    let raw = env.get("SOURCES").ok_or_else(|| {
        ConfigError::new(
            "SOURCES",
            "is not set; declare the sources in wrangler.toml [vars]",
        )
    })?;
    parse_sources(&raw)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sources_are_read_from_an_object_or_a_json_string() {
        let object = json!({"a": {"scheme": "github"}});
        let string = json!("{\"a\": {\"scheme\": \"github\"}}");
        assert_eq!(
            parse_sources(&object).unwrap(),
            parse_sources(&string).unwrap()
        );
        let a = &parse_sources(&object).unwrap()[0];
        assert_eq!(
            (
                a.scheme.name.as_ref(),
                a.tolerance_s,
                a.downstream.as_deref()
            ),
            ("github", 300, None)
        );
    }

    #[test]
    fn an_empty_sources_object_declares_no_source() {
        assert!(parse_sources(&json!({})).unwrap().is_empty());
        assert!(parse_sources(&json!("{}")).unwrap().is_empty());
    }

    #[test]
    fn a_bad_source_declaration_names_its_key() {
        let table = [
            (json!(42), "SOURCES"),
            (json!("not json"), "SOURCES"),
            (
                json!({"Bad Name": {"scheme": "stripe"}}),
                "SOURCES.Bad Name",
            ),
            (json!({"a": "stripe"}), "SOURCES.a"),
            (json!({"a": {}}), "SOURCES.a.scheme"),
            (json!({"a": {"scheme": "md5"}}), "SOURCES.a.scheme"),
            (
                json!({"a": {"scheme": "stripe", "tolerance_s": 0}}),
                "SOURCES.a.tolerance_s",
            ),
            (
                json!({"a": {"scheme": "stripe", "tolerance_s": "300"}}),
                "SOURCES.a.tolerance_s",
            ),
            (
                json!({"a": {"scheme": "stripe", "downstream": "ftp://x"}}),
                "SOURCES.a.downstream",
            ),
            (
                json!({"a": {"scheme": "stripe", "secret": "x"}}),
                "SOURCES.a.secret",
            ),
            (
                json!({"a": {"scheme": "stripe", "expect_every": "6"}}),
                "SOURCES.a.expect_every",
            ),
            (
                json!({"a": {"scheme": "stripe", "expect_every": 3600}}),
                "SOURCES.a.expect_every",
            ),
            (
                json!({"a": {"scheme": "stripe", "expect_every": "0m"}}),
                "SOURCES.a.expect_every",
            ),
        ];
        for (raw, key) in table {
            assert_eq!(parse_sources(&raw).unwrap_err().key, key, "{raw}");
        }
    }

    #[test]
    fn the_secret_name_upper_cases_and_replaces_dashes() {
        assert_eq!(secret_name("demo-stripe"), "WEBHOOK_SECRET_DEMO_STRIPE");
        assert_eq!(
            secret_name("acme_billing-2"),
            "WEBHOOK_SECRET_ACME_BILLING_2"
        );
    }

    #[test]
    fn colliding_secret_names_are_a_configuration_error() {
        let table = [
            (
                json!({"a-b": {"scheme": "github"}, "a_b": {"scheme": "github"}}),
                "SOURCES.a_b",
            ),
            (
                json!({"acme": {"scheme": "github"}, "acme-previous": {"scheme": "github"}}),
                "SOURCES.acme-previous",
            ),
            (
                json!({"acme_previous": {"scheme": "github"}, "acme": {"scheme": "github"}}),
                "SOURCES.acme_previous",
            ),
        ];
        for (raw, key) in table {
            let err = parse_sources(&raw).unwrap_err();
            assert_eq!(err.key, key, "{raw}");
            assert!(err.problem.contains("rename one"), "{}", err.problem);
        }
        assert!(
            parse_sources(&json!({"ab": {"scheme": "github"}, "a-b": {"scheme": "github"}}))
                .is_ok()
        );
    }

    #[test]
    fn a_recipe_or_a_preset_field_error_names_the_source_and_the_field() {
        let ed = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a";
        let table = [
            (
                json!({"acme": {"scheme": {"hmac": "sha256", "header": "x-s", "encoding": "base32", "signed": "{body}"}}}),
                "SOURCES.acme.scheme.encoding",
            ),
            (
                json!({"acme": {"scheme": {"hmac": "sha256", "header": "x-s", "encoding": "hex", "signed": "{body}", "timestamp": {"header": "x-t", "unit": "h"}}}}),
                "SOURCES.acme.scheme.timestamp.unit",
            ),
            (json!({"acme": {"scheme": "slak"}}), "SOURCES.acme.scheme"),
            (json!({"d": {"scheme": "discord"}}), "SOURCES.d.public_key"),
            (
                json!({"d": {"scheme": "discord", "public_key": "abcd"}}),
                "SOURCES.d.public_key",
            ),
            (
                json!({"s": {"scheme": "sendgrid", "public_key": ed}}),
                "SOURCES.s.public_key",
            ),
            (
                json!({"g": {"scheme": "github", "public_key": ed}}),
                "SOURCES.g.public_key",
            ),
            (
                json!({"t": {"scheme": "twilio", "url": "/relative"}}),
                "SOURCES.t.url",
            ),
        ];
        for (raw, key) in table {
            assert_eq!(parse_sources(&raw).unwrap_err().key, key, "{raw}");
        }
        let ok = parse_sources(&json!({"d": {"scheme": "discord", "public_key": ed}, "t": {"scheme": "twilio", "url": "https://hooks.example.com/t"}})).unwrap();
        assert_eq!(ok[0].public_key.as_deref(), Some(ed));
        assert_eq!(ok[1].url.as_deref(), Some("https://hooks.example.com/t"));
        assert_eq!((ok[0].tolerance_s, ok[1].tolerance_s), (300, 300));
        let paddle = parse_sources(&json!({"p": {"scheme": "paddle"}})).unwrap();
        assert_eq!(paddle[0].tolerance_s, 5, "a preset's own tolerance");
    }

    #[test]
    fn the_previous_secret_is_a_second_key_and_a_public_key_source_needs_no_secret() {
        let ed = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a";
        let env = |extra: &[(&str, &str)]| {
            let mut env: std::collections::BTreeMap<String, Value> = [
                ("SOURCES".to_string(), json!({"gh": {"scheme": "github"}, "std": {"scheme": "standard-webhooks"}, "d": {"scheme": "discord", "public_key": ed}})),
                ("WEBHOOK_SECRET_GH".to_string(), json!("new")),
                ("WEBHOOK_SECRET_STD".to_string(), json!("whsec_c2Vjb25kLXNlY3JldA==")),
            ]
            .into_iter()
            .collect();
            for (k, v) in extra {
                env.insert((*k).to_string(), json!(v));
            }
            env
        };
        let bound = |env: &std::collections::BTreeMap<String, Value>| {
            Sources::bind(&load_sources(env).unwrap(), env)
        };
        let sources = bound(&env(&[("WEBHOOK_SECRET_GH_PREVIOUS", "old")])).unwrap();
        let keys: Vec<&[u8]> = sources
            .get("gh")
            .unwrap()
            .keys
            .iter()
            .map(SigningKey::as_bytes)
            .collect();
        assert_eq!(keys, [b"new".as_slice(), b"old".as_slice()]);
        assert_eq!(sources.get("std").unwrap().keys.len(), 1);
        let d = sources.get("d").unwrap();
        assert_eq!(
            (d.keys.len(), d.public_key.as_ref().map(Vec::len)),
            (0, Some(32))
        );
        let err = bound(&env(&[("WEBHOOK_SECRET_STD_PREVIOUS", "not base64!")])).unwrap_err();
        assert_eq!(err.key, "WEBHOOK_SECRET_STD_PREVIOUS");
    }

    #[test]
    fn expect_every_is_an_optional_duration_per_source() {
        let specs = parse_sources(&json!({
            "quiet": {"scheme": "github", "expect_every": "6h"},
            "loud": {"scheme": "github"},
            "nulled": {"scheme": "github", "expect_every": null}
        }))
        .unwrap();
        let by_name = |n: &str| specs.iter().find(|s| s.name == n).unwrap().expect_every_ms;
        assert_eq!(by_name("quiet"), Some(21_600_000));
        assert_eq!(by_name("loud"), None);
        assert_eq!(by_name("nulled"), None);
    }
}
