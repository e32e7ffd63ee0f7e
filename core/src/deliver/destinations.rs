//! `DESTINATIONS` (DESIGN §1, §3): where routes send events, by name, and
//! how each is reached: a URL, or another Worker through a service
//! binding, that gets the signed POST, optionally with a credential
//! (`auth`); or the user's own Cloudflare Queue, which gets a message
//! (`crate::deliver::queue_destination`); or nobody at all: a pull
//! destination's deliveries wait in D1 until a consumer pulls them
//! (`crate::deliver::pull`). The credentials' secrets are read beside
//! this, in `super::destination_keys`; the bindings a destination names
//! are the user's to declare, and [`check_bindings`] refuses one that is
//! missing.

use super::destination_keys::{auth_header, AuthForm, DestinationKeys};
use crate::signature::{KeyForm, SigningKey};
use crate::support::bindings::RELAY_BINDINGS;
use crate::support::env::text;
use crate::support::env::{fail, object_var, ConfigEnv, ConfigError, FieldError};
use crate::support::env::{is_http_url, is_valid_name};
use serde_json::{Map, Value};

/// Where a destination's calls go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// `{"url": …}`: the signed POST over the network.
    Url(String),
    /// `{"service": "<binding>"}`: the signed POST to another Worker
    /// through the relay's service binding of that name, with no public hop.
    Service(String),
    /// `{"queue": "<binding>"}`: a message on the user's Cloudflare Queue,
    /// through the relay's producer binding of that name.
    Queue(String),
    /// `{"pull": {"lease_s"?}}`: nothing is called; a consumer pulls the
    /// deliveries (DESIGN §4, "Pulling") and holds each for `lease_s`.
    Pull(PullSettings),
}

/// A pull destination's settings (DESIGN §3, "Pull destinations").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PullSettings {
    /// How long a pulled delivery stays leased to its consumer, in seconds
    /// (10-600, default 60).
    pub lease_s: u32,
}

/// The range of a pull destination's `lease_s`, in seconds.
pub const PULL_LEASE_RANGE_S: std::ops::RangeInclusive<u64> = 10..=600;
/// A pull destination's `lease_s` when it sets none.
pub const PULL_LEASE_DEFAULT_S: u32 = 60;

/// The kind of binding a destination names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BindingKind {
    /// A service binding (`[[services]]`).
    Service,
    /// A queue producer binding (`[[queues.producers]]`).
    Queue,
}

impl BindingKind {
    /// How the user declares one in the relay's `wrangler.toml`.
    fn declaration(self, binding: &str) -> String {
        match self {
            BindingKind::Service => {
                format!("[[services]] binding = \"{binding}\", service = \"<the worker's name>\"")
            }
            BindingKind::Queue => {
                format!(
                    "[[queues.producers]] binding = \"{binding}\", queue = \"<your queue's name>\""
                )
            }
        }
    }

    fn field(self) -> &'static str {
        match self {
            BindingKind::Service => "service",
            BindingKind::Queue => "queue",
        }
    }
}

/// A destination: where its calls go, and how.
#[derive(Debug, Clone, PartialEq)]
pub struct Destination {
    /// Its name (the key of the breaker, parking, stats and alarms).
    pub name: String,
    /// Where its calls go.
    pub target: Target,
    /// `auth`: the credential sent with each call, if any.
    pub auth: Option<AuthForm>,
    /// `rate_per_s` (0.1-100): the most calls it takes per second;
    /// `None`: no rate of its own.
    pub rate_per_s: Option<f64>,
    /// `timeout_ms` (100-120000), else `DELIVERY_TIMEOUT_MS`.
    pub timeout_ms: u32,
    /// Its secrets, bound at startup (`super::destination_keys`); empty
    /// as parsed.
    pub keys: DestinationKeys,
}

/// The range a call's timeout may take (`DELIVERY_TIMEOUT_MS`, and a
/// destination's `timeout_ms`), in ms. Here, beside the destination that
/// carries it, so `delivery.rs` reads it from this file and never the reverse.
pub const DELIVERY_TIMEOUT_RANGE_MS: std::ops::RangeInclusive<u64> = 100..=120_000;

const KEY: &str = "DESTINATIONS";
const FIELDS: [&str; 7] = [
    "url",
    "service",
    "queue",
    "pull",
    "auth",
    "rate_per_s",
    "timeout_ms",
];
/// Headers every call sets itself (or the runtime does): an `auth` header
/// never replaces one of them.
const RESERVED_HEADERS: [&str; 10] = [
    "content-type",
    "content-length",
    "host",
    "transfer-encoding",
    "connection",
    "x-operation-id",
    "x-timestamp",
    "x-signature",
    "x-hookrelay-source",
    "x-idempotency-key",
];

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
    /// A URL destination with no credential and no rate: what a source's
    /// `downstream` declares.
    pub fn url(name: &str, url: &str, timeout_ms: u32) -> Destination {
        Destination {
            name: name.to_string(),
            target: Target::Url(url.to_string()),
            auth: None,
            rate_per_s: None,
            timeout_ms,
            keys: DestinationKeys::default(),
        }
    }

    /// What its secrets' names end with (DESIGN §1,
    /// `DESTINATION_SECRET_<NAME>`, `DESTINATION_SIGNING_SECRET_<NAME>`):
    /// the name upper-cased, `-` as `_`.
    pub fn secret_suffix(&self) -> String {
        self.name.to_ascii_uppercase().replace('-', "_")
    }

    /// `DESTINATION_SECRET_<NAME>`: the value of its `auth`.
    pub fn auth_secret_name(&self) -> String {
        format!("DESTINATION_SECRET_{}", self.secret_suffix())
    }

    /// `DESTINATION_SIGNING_SECRET_<NAME>`: its own signing key, if set.
    pub fn signing_secret_name(&self) -> String {
        format!("DESTINATION_SIGNING_SECRET_{}", self.secret_suffix())
    }

    /// Whether its calls are signed: a POST is; a message on the user's
    /// own queue is not.
    pub fn signs(&self) -> bool {
        !matches!(self.target, Target::Queue(_) | Target::Pull(_))
    }

    /// Its pull settings when it is a pull destination: nothing calls it.
    pub fn pull(&self) -> Option<PullSettings> {
        match self.target {
            Target::Pull(p) => Some(p),
            _ => None,
        }
    }

    /// The binding it is reached through, if any.
    pub fn binding(&self) -> Option<(BindingKind, &str)> {
        match &self.target {
            Target::Url(_) | Target::Pull(_) => None,
            Target::Service(b) => Some((BindingKind::Service, b)),
            Target::Queue(b) => Some((BindingKind::Queue, b)),
        }
    }
}

/// The URL of the POST a service destination receives: a service binding
/// needs a URL but never resolves its host, so it only tells the user's
/// Worker which destination called it.
pub fn service_url(destination: &str) -> String {
    format!("https://hookrelay.internal/{destination}")
}

/// Refuses a destination whose binding the worker does not declare
/// (`declared(kind, name)`: the startup asks the runtime, `build.rs` the
/// committed `wrangler.toml`), naming the binding and how to declare it.
pub fn check_bindings(
    destinations: &[Destination],
    declared: impl Fn(BindingKind, &str) -> bool,
) -> Result<(), ConfigError> {
    for d in destinations {
        if let Some((kind, binding)) = d.binding() {
            if !declared(kind, binding) {
                return Err(ConfigError::new(
                    format!("{KEY}.{}.{}", d.name, kind.field()),
                    format!("names the {} binding `{binding}`, which the relay does not declare; add {} to the relay's wrangler.toml (the binding is yours to declare: hookrelay ships none)", kind.field(), kind.declaration(binding)),
                ));
            }
        }
    }
    Ok(())
}

/// What the relay itself sends to, by name: the queues it produces to or
/// consumes (its `QUEUE_*` names and dead-letter queues) and the Workers
/// it calls (the DLQ worker) or is (its own name).
#[derive(Debug, Clone, Default)]
pub struct OwnTargets {
    /// Queue names.
    pub queues: Vec<String>,
    /// Worker (service) names.
    pub services: Vec<String>,
}

/// Refuses a destination whose binding reaches a queue or a Worker the
/// relay itself uses under another binding name (an alias of `webhooks`,
/// say): `target(kind, binding)` is the queue or service the binding
/// points at, as `build.rs` reads it from `wrangler.toml` (the runtime
/// does not say, so the startup checks binding names only).
pub fn check_not_own_targets(
    destinations: &[Destination],
    target: impl Fn(BindingKind, &str) -> Option<String>,
    own: &OwnTargets,
) -> Result<(), ConfigError> {
    for d in destinations {
        let Some((kind, binding)) = d.binding() else {
            continue;
        };
        let Some(name) = target(kind, binding) else {
            continue;
        };
        let (list, what) = match kind {
            BindingKind::Queue => (&own.queues, "queue"),
            BindingKind::Service => (&own.services, "Worker"),
        };
        if list.contains(&name) {
            return Err(ConfigError::new(
                format!("{KEY}.{}.{}", d.name, kind.field()),
                format!("names the binding `{binding}`, which reaches the {what} `{name}` that the relay itself uses: a destination there would feed the relay's own machinery; point the binding at your own {what}"),
            ));
        }
    }
    Ok(())
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
    if let Some(field) = fields.keys().find(|f| !FIELDS.contains(&f.as_str())) {
        return fail(
            &format!(".{field}"),
            format!("unknown field; expected {}", FIELDS.join(", ")),
        );
    }
    let target = target_of(fields)?;
    if let Target::Queue(_) = target {
        // The message is on the user's own queue: nobody to show a
        // credential to, and a send is answered by Cloudflare, not waited
        // for as a receiver is.
        for field in ["auth", "timeout_ms"] {
            if fields.contains_key(field) {
                return fail(
                    &format!(".{field}"),
                    "does not apply to a queue destination: its message goes to your own queue, which Cloudflare answers at once",
                );
            }
        }
    }
    if let Target::Pull(_) = target {
        // Nothing is called: no credential to send, no answer to wait
        // for, and the consumer sets its own pace by pulling.
        for field in ["auth", "timeout_ms", "rate_per_s"] {
            if fields.contains_key(field) {
                return fail(
                    &format!(".{field}"),
                    "does not apply to a pull destination: nothing is called, its consumer pulls the deliveries at its own pace (set the lease with pull.lease_s)",
                );
            }
        }
    }
    Ok(Destination {
        name: name.to_string(),
        target,
        auth: auth_of(fields)?,
        rate_per_s: rate_of(fields)?,
        timeout_ms: timeout_of(fields, default_timeout_ms)?,
        keys: DestinationKeys::default(),
    })
}

/// The one of `url`, `service`, `queue` and `pull` the declaration gives.
fn target_of(fields: &Map<String, Value>) -> Result<Target, FieldError> {
    let given: Vec<&str> = ["url", "service", "queue", "pull"]
        .into_iter()
        .filter(|f| fields.contains_key(*f))
        .collect();
    match given.as_slice() {
        [] => fail(
            ".url",
            "is required: the http:// or https:// URL events are POSTed to (or name a binding with \"service\" or \"queue\", or declare {\"pull\": {}})",
        ),
        ["pull"] => pull_of(fields.get("pull")).map(Target::Pull),
        ["url"] => match fields.get("url") {
            Some(Value::String(url)) if is_http_url(url) => Ok(Target::Url(url.clone())),
            _ => fail(".url", "must be an http:// or https:// URL"),
        },
        [kind] => match fields.get(*kind) {
            Some(Value::String(b)) if RELAY_BINDINGS.contains(&b.as_str()) => fail(
                &format!(".{kind}"),
                format!("names `{b}`, one of the relay's own bindings ({}): a destination there would feed the relay's own queues or workers (a message on WEBHOOKS comes back as an event); declare a binding of your own for your queue or Worker and name it here", RELAY_BINDINGS.join(", ")),
            ),
            Some(Value::String(b)) if is_binding_name(b) => Ok(if *kind == "queue" {
                Target::Queue(b.clone())
            } else {
                Target::Service(b.clone())
            }),
            _ => fail(
                &format!(".{kind}"),
                format!("must be the name of a {kind} binding of the relay: a letter or _, then letters, digits or _"),
            ),
        },
        many => fail(
            "",
            format!("has {}; a destination is one of url, service, queue and pull", many.join(" and ")),
        ),
    }
}

/// `pull`'s object: `{"lease_s"?: 10-600}`, no other field.
fn pull_of(raw: Option<&Value>) -> Result<PullSettings, FieldError> {
    let Some(Value::Object(fields)) = raw else {
        return fail(".pull", "must be an object such as {} or {\"lease_s\": 60}");
    };
    if let Some(field) = fields.keys().find(|f| f.as_str() != "lease_s") {
        return fail(&format!(".pull.{field}"), "unknown field; expected lease_s");
    }
    let lease_s = match fields.get("lease_s") {
        None | Some(Value::Null) => PULL_LEASE_DEFAULT_S,
        Some(v) => match v.as_u64().filter(|s| PULL_LEASE_RANGE_S.contains(s)) {
            Some(s) => s as u32,
            None => {
                return fail(
                    ".pull.lease_s",
                    "must be a whole number of seconds from 10 to 600",
                )
            }
        },
    };
    Ok(PullSettings { lease_s })
}

/// A binding name as wrangler takes it: a JavaScript identifier of ASCII.
fn is_binding_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    matches!(bytes.next(), Some(b) if b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
        && name.len() <= 64
}

fn auth_of(fields: &Map<String, Value>) -> Result<Option<AuthForm>, FieldError> {
    const FORMS: &str = "must be \"bearer\", \"basic\" or \"header:<Name>\" (the value is the secret DESTINATION_SECRET_<NAME>)";
    let raw = match fields.get("auth") {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::String(raw)) => raw.as_str(),
        Some(_) => return fail(".auth", FORMS),
    };
    match raw {
        "bearer" => Ok(Some(AuthForm::Bearer)),
        "basic" => Ok(Some(AuthForm::Basic)),
        _ => match raw.strip_prefix("header:") {
            Some(name) => header_name(name).map(|n| Some(AuthForm::Header(n))),
            None => fail(".auth", FORMS),
        },
    }
}

/// The header of `header:<Name>`, lower-cased: an HTTP token (RFC 9110
/// `tchar`s), and none a call sets itself.
fn header_name(name: &str) -> Result<String, FieldError> {
    let tchar = |b: u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b);
    if name.is_empty() || !name.bytes().all(tchar) {
        return fail(
            ".auth",
            "header:<Name> needs a header name of letters, digits and - (such as header:X-Api-Key)",
        );
    }
    let lower = name.to_ascii_lowercase();
    if RESERVED_HEADERS.contains(&lower.as_str()) {
        return fail(
            ".auth",
            format!(
                "header:{name} is a header every call sets itself ({}); name another header",
                RESERVED_HEADERS.join(", ")
            ),
        );
    }
    Ok(lower)
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

/// Reads each destination's keys (`super::destination_keys`), in the same
/// order.
pub fn load_keys(
    env: &impl ConfigEnv,
    destinations: &[Destination],
) -> Result<Vec<DestinationKeys>, ConfigError> {
    let mut out = Vec::with_capacity(destinations.len());
    for d in destinations {
        let signing = text(env, &d.signing_secret_name())
            .filter(|s| !s.is_empty())
            .and_then(|s| SigningKey::from_secret(KeyForm::Raw, &s).ok());
        let auth = match &d.auth {
            None => None,
            Some(form) => {
                let name = d.auth_secret_name();
                let secret = text(env, &name).ok_or_else(|| {
                    ConfigError::new(
                        &name,
                        format!("is not set, but destination '{}' sends it as its auth; set it with `wrangler secret put {name}`", d.name),
                    )
                })?;
                let header = auth_header(form, &secret).map_err(|problem| {
                    ConfigError::new(&name, format!("{problem} (destination '{}')", d.name))
                })?;
                Some(header)
            }
        };
        out.push(DestinationKeys { auth, signing });
    }
    Ok(out)
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
                Destination::url("analytics", "http://127.0.0.1:9/a", 10_000),
                Destination {
                    name: "billing".into(),
                    target: Target::Url("https://billing.example/hook".into()),
                    auth: None,
                    rate_per_s: Some(2.5),
                    timeout_ms: 3000,
                    keys: DestinationKeys::default(),
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
    fn a_service_destination_names_its_binding_which_must_be_declared() {
        let parsed = parse_destinations(
            &json!({"billing": {"service": "BILLING_WORKER", "auth": "bearer", "timeout_ms": 500}}),
            10_000,
        )
        .unwrap();
        let d = &parsed[0];
        assert_eq!(d.target, Target::Service("BILLING_WORKER".into()));
        assert_eq!(d.binding(), Some((BindingKind::Service, "BILLING_WORKER")));
        assert_eq!(
            (d.auth.clone(), d.timeout_ms),
            (Some(AuthForm::Bearer), 500)
        );
        assert_eq!(service_url("billing"), "https://hookrelay.internal/billing");
        assert!(check_bindings(&parsed, |k, b| k == BindingKind::Service
            && b == "BILLING_WORKER")
        .is_ok());
        let err = check_bindings(&parsed, |_, _| false).unwrap_err();
        assert_eq!(err.key, "DESTINATIONS.billing.service");
        for part in [
            "`BILLING_WORKER`",
            "[[services]] binding = \"BILLING_WORKER\"",
            "wrangler.toml",
        ] {
            assert!(err.problem.contains(part), "{err}");
        }
        let url = parse_destinations(&json!({"u": {"url": "https://x.example/h"}}), 1).unwrap();
        assert!(
            check_bindings(&url, |_, _| false).is_ok(),
            "a URL needs no binding"
        );
        for (bad, fragment) in [
            (
                json!({"url": "https://x.example/h", "service": "B"}),
                "has url and service",
            ),
            (json!({"service": "not-an-identifier"}), "a letter or _"),
            (json!({"service": "9B"}), "a letter or _"),
            (json!({"service": 7}), "a letter or _"),
        ] {
            let err = parse_destinations(&json!({"b": bad}), 1).unwrap_err();
            assert!(err.problem.contains(fragment), "{bad}: {err}");
        }
    }

    #[test]
    fn a_destination_on_one_of_the_relays_own_bindings_is_refused_naming_its_path() {
        for (kind, binding) in [
            ("queue", "WEBHOOKS"),
            ("queue", "DELIVERIES"),
            ("queue", "WEBHOOKS_DLQ"),
            ("queue", "CONTROL"),
            ("service", "DLQ"),
            ("queue", "DB"),
            ("service", "ARCHIVE"),
        ] {
            let err = parse_destinations(&json!({"x": {kind: binding}}), 1).unwrap_err();
            assert_eq!(err.key, format!("DESTINATIONS.x.{kind}"), "{binding}");
            assert!(err.problem.contains(&format!("`{binding}`")), "{err}");
            assert!(err.problem.contains("relay's own bindings"), "{err}");
        }
        assert!(parse_destinations(&json!({"x": {"queue": "USER_JOBS"}}), 1).is_ok());
    }

    #[test]
    fn a_destination_reaching_the_relays_own_queue_or_worker_by_another_binding_is_refused() {
        let parsed = parse_destinations(
            &json!({"alias": {"queue": "MY_EVENTS"}, "mine": {"queue": "USER_JOBS"}, "svc": {"service": "MY_WORKER"}}),
            10_000,
        )
        .unwrap();
        let own = OwnTargets {
            queues: vec!["webhooks".into(), "deliveries".into()],
            services: vec!["hookrelay-dlq".into(), "hookrelay".into()],
        };
        let target = |queue: &'static str, service: &'static str| {
            move |kind: BindingKind, binding: &str| -> Option<String> {
                match (kind, binding) {
                    (BindingKind::Queue, "MY_EVENTS") => Some(queue.into()),
                    (BindingKind::Queue, _) => Some("user-jobs".into()),
                    (BindingKind::Service, _) => Some(service.into()),
                }
            }
        };
        let err = check_not_own_targets(&parsed, target("webhooks", "billing"), &own).unwrap_err();
        assert_eq!(err.key, "DESTINATIONS.alias.queue");
        assert!(
            err.problem.contains("`MY_EVENTS`") && err.problem.contains("`webhooks`"),
            "{err}"
        );
        let err = check_not_own_targets(&parsed, target("events", "hookrelay"), &own).unwrap_err();
        assert_eq!(err.key, "DESTINATIONS.svc.service");
        assert!(check_not_own_targets(&parsed, target("events", "billing"), &own).is_ok());
        assert!(
            check_not_own_targets(&parsed, |_, _| None, &own).is_ok(),
            "the startup knows binding names only"
        );
    }

    #[test]
    fn a_queue_destination_names_its_producer_binding_and_takes_no_auth_or_timeout() {
        let parsed = parse_destinations(
            &json!({"jobs": {"queue": "USER_JOBS", "rate_per_s": 5}}),
            10_000,
        )
        .unwrap();
        assert_eq!(parsed[0].target, Target::Queue("USER_JOBS".into()));
        assert_eq!(parsed[0].binding(), Some((BindingKind::Queue, "USER_JOBS")));
        let err = check_bindings(&parsed, |k, b| {
            k == BindingKind::Service && b == "USER_JOBS"
        })
        .unwrap_err();
        assert_eq!(err.key, "DESTINATIONS.jobs.queue");
        assert!(
            err.problem
                .contains("[[queues.producers]] binding = \"USER_JOBS\""),
            "{err}"
        );
        for (bad, key, fragment) in [
            (
                json!({"queue": "Q", "auth": "bearer"}),
                "DESTINATIONS.b.auth",
                "does not apply",
            ),
            (
                json!({"queue": "Q", "timeout_ms": 500}),
                "DESTINATIONS.b.timeout_ms",
                "does not apply",
            ),
            (
                json!({"queue": "Q", "service": "S"}),
                "DESTINATIONS.b",
                "has service and queue",
            ),
            (
                json!({"queue": "my-queue"}),
                "DESTINATIONS.b.queue",
                "a letter or _",
            ),
        ] {
            let err = parse_destinations(&json!({"b": bad}), 1).unwrap_err();
            assert_eq!(err.key, key, "{bad}");
            assert!(err.problem.contains(fragment), "{bad}: {err}");
        }
    }

    /// A pull declaration's lease, or the key and a fragment of its error.
    type PullWant = Result<u32, (&'static str, &'static str)>;

    fn pull_declarations() -> Vec<(Value, PullWant)> {
        let range = "10 to 600";
        let not_here = "does not apply to a pull destination";
        vec![
            (json!({"pull": {}}), Ok(60)),
            (json!({"pull": {"lease_s": null}}), Ok(60)),
            (json!({"pull": {"lease_s": 10}}), Ok(10)),
            (json!({"pull": {"lease_s": 600}}), Ok(600)),
            (
                json!({"pull": {"lease_s": 9}}),
                Err(("DESTINATIONS.p.pull.lease_s", range)),
            ),
            (
                json!({"pull": {"lease_s": 601}}),
                Err(("DESTINATIONS.p.pull.lease_s", range)),
            ),
            (
                json!({"pull": {"lease_s": 30.5}}),
                Err(("DESTINATIONS.p.pull.lease_s", range)),
            ),
            (
                json!({"pull": {"lease_s": "60"}}),
                Err(("DESTINATIONS.p.pull.lease_s", range)),
            ),
            (
                json!({"pull": {"lease": 60}}),
                Err(("DESTINATIONS.p.pull.lease", "expected lease_s")),
            ),
            (
                json!({"pull": true}),
                Err(("DESTINATIONS.p.pull", "must be an object")),
            ),
            (
                json!({"pull": {}, "auth": "bearer"}),
                Err(("DESTINATIONS.p.auth", not_here)),
            ),
            (
                json!({"pull": {}, "timeout_ms": 500}),
                Err(("DESTINATIONS.p.timeout_ms", not_here)),
            ),
            (
                json!({"pull": {}, "rate_per_s": 5}),
                Err(("DESTINATIONS.p.rate_per_s", not_here)),
            ),
            (
                json!({"pull": {}, "queue": "Q"}),
                Err(("DESTINATIONS.p", "has queue and pull")),
            ),
            (
                json!({"pull": {}, "url": "https://x.example/h"}),
                Err(("DESTINATIONS.p", "has url and pull")),
            ),
            (
                json!({"pull": {}, "lease_s": 60}),
                Err(("DESTINATIONS.p.lease_s", "unknown field")),
            ),
        ]
    }

    #[test]
    fn a_pull_destination_takes_a_lease_and_nothing_that_calls() {
        for (decl, want) in pull_declarations() {
            let got = parse_destinations(&json!({ "p": decl }), 10_000);
            match want {
                Ok(lease_s) => {
                    let d = &got.unwrap_or_else(|e| panic!("{decl}: {e}"))[0];
                    assert_eq!(d.target, Target::Pull(PullSettings { lease_s }), "{decl}");
                    assert_eq!(d.pull(), Some(PullSettings { lease_s }));
                    assert_eq!(
                        (d.binding(), d.signs(), d.auth.clone()),
                        (None, false, None)
                    );
                }
                Err((key, fragment)) => {
                    let err = got.unwrap_err();
                    assert_eq!(err.key, key, "{decl}");
                    assert!(err.problem.contains(fragment), "{decl}: {err}");
                }
            }
        }
        let url = parse_destinations(&json!({"u": {"url": "https://x.example/h"}}), 1).unwrap();
        assert_eq!(url[0].pull(), None);
    }
}
