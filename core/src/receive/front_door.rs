//! The front door: from a raw request to an accepted event, a handshake's
//! answer, or a refusal.
//!
//! Order of checks: method, source, size, signature (on the raw bytes), and
//! only then the body's content, so an unsigned request learns nothing
//! about the body. Each refusal maps to one status and one stable code; the
//! message says what to fix, never what a signature should have been.
//!
//! A signature the relay does not check natively (HMAC-SHA1 and -SHA512,
//! the public-key schemes) is checked by the glue with WebCrypto: [`accept`]
//! hands it an [`Admission::Deferred`] check, and the glue calls
//! [`accept_signed`] once it passes.

use crate::receive::idempotency::{event_id, idempotency_key, MAX_DELIVERY_ID_LEN};
use crate::receive::sources::Source;
use crate::receive::sources::Sources;
use crate::signature::answer::Reply;
use crate::signature::{
    check_body_timestamp, handshake, places, verify, Answer, Deferred, HeaderLookup, Request,
    Scheme, SignatureError, Verdict, Verified,
};
use crate::support::form;
use crate::support::redact::{capture_headers, REDACTED};
use crate::UnixMillis;
use serde_json::Value;
use std::collections::BTreeMap;

/// A request to `/webhooks/{source}`, as the glue read it.
pub struct Inbound<'a, H: HeaderLookup + ?Sized> {
    /// The HTTP method.
    pub method: &'a str,
    /// The `{source}` path segment.
    pub source: &'a str,
    /// The URL as the relay received it (signed by `{url}` unless the
    /// source sets its own `url`).
    pub url: &'a str,
    /// Header lookup for verification (lower-case names).
    pub headers: &'a H,
    /// All headers, for the redacted copy kept with the event.
    pub header_list: &'a [(String, String)],
    /// The raw body.
    pub body: &'a [u8],
    /// The relay's clock.
    pub now_ms: UnixMillis,
}

/// An event the relay will enqueue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Accepted {
    /// Derived from the idempotency key.
    pub event_id: String,
    /// The event's identity.
    pub idempotency_key: String,
    /// The source name.
    pub source: String,
    /// The provider's delivery id, if any.
    pub delivery_id: Option<String>,
    /// Redacted headers (the `content-type` among them, kept as received).
    pub headers: BTreeMap<String, String>,
    /// The body text, byte-exact (verified UTF-8, JSON or a form).
    pub body: String,
    /// The answer the provider needs once the event is on the queue.
    pub answer: Answer,
}

/// What the front door decided about a request it did not refuse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Admission {
    /// An event to enqueue, then answer with its `answer`.
    Event(Accepted),
    /// A handshake, verified: answered at once, never enqueued.
    Handshake(Reply),
    /// A signature for the glue to check with WebCrypto; when it holds,
    /// [`accept_signed`] continues.
    Deferred {
        /// The check.
        check: Deferred,
        /// The source's public key (raw Ed25519, or P-256 SPKI DER), for a
        /// public-key check.
        public_key: Option<Vec<u8>>,
        /// What the headers said.
        verified: Verified,
    },
}

/// Why a request was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rejection {
    /// Only POST is accepted.
    MethodNotAllowed,
    /// `{source}` is not configured.
    UnknownSource(String),
    /// The body exceeds `MAX_BODY_BYTES`.
    TooLarge {
        /// The configured limit.
        limit: u64,
    },
    /// The signature check failed.
    Signature(SignatureError),
    /// The body cannot be accepted by the source's scheme.
    BadBody(String),
    /// The provider's delivery id cannot become part of an idempotency key.
    BadDeliveryId {
        /// Where the id came from, e.g. `x-operation-id`.
        header: String,
    },
    /// This address's signature checks for this source kept failing
    /// (`crate::receive::signature_limit`): refused before its body is read.
    SignatureRateLimited {
        /// Seconds until the block ends (`Retry-After`).
        retry_after_s: u32,
    },
}

impl Rejection {
    /// The HTTP status.
    pub fn status(&self) -> u16 {
        match self {
            Rejection::MethodNotAllowed => 405,
            Rejection::UnknownSource(_) => 404,
            Rejection::TooLarge { .. } => 413,
            Rejection::Signature(_) => 401,
            Rejection::BadBody(_) | Rejection::BadDeliveryId { .. } => 400,
            Rejection::SignatureRateLimited { .. } => 429,
        }
    }

    /// A stable machine-readable code for the response body.
    pub fn code(&self) -> &'static str {
        match self {
            Rejection::MethodNotAllowed => "METHOD_NOT_ALLOWED",
            Rejection::UnknownSource(_) => "UNKNOWN_SOURCE",
            Rejection::TooLarge { .. } => "PAYLOAD_TOO_LARGE",
            Rejection::Signature(SignatureError::Stale { .. }) => "SIGNATURE_STALE",
            Rejection::Signature(SignatureError::MissingHeader(_)) => "SIGNATURE_MISSING",
            Rejection::Signature(_) => "SIGNATURE_INVALID",
            Rejection::BadBody(_) => "BAD_PAYLOAD",
            Rejection::BadDeliveryId { .. } => "BAD_DELIVERY_ID",
            Rejection::SignatureRateLimited { .. } => "SIGNATURE_RATE_LIMITED",
        }
    }

    /// What went wrong and what to do.
    pub fn message(&self) -> String {
        match self {
            Rejection::MethodNotAllowed => "only POST is accepted on /webhooks/{source}".into(),
            Rejection::UnknownSource(s) => format!(
                "no source named '{s}' is configured; see GET /healthz for the configured sources"
            ),
            Rejection::TooLarge { limit } => {
                format!("body exceeds the {limit}-byte limit (MAX_BODY_BYTES)")
            }
            Rejection::Signature(e) => e.to_string(),
            Rejection::BadBody(m) => m.clone(),
            Rejection::BadDeliveryId { header } => format!(
                "{header} must be 1-{MAX_DELIVERY_ID_LEN} printable ASCII characters; it becomes part of the idempotency key and of the headers sent downstream. Send a plain ASCII id"
            ),
            Rejection::SignatureRateLimited { retry_after_s } => format!(
                "too many requests from this address failed their signature check for this source; nothing is read from it until the block ends: retry after {retry_after_s}s, signed with the source's current secret"
            ),
        }
    }
}

/// What the front door reads of the relay's configuration.
#[derive(Debug, Clone, Copy)]
pub struct FrontDoorConfig<'a> {
    /// The configured sources.
    pub sources: &'a Sources,
    /// `MAX_BODY_BYTES`: the largest accepted body.
    pub max_body_bytes: u64,
}

/// The checks that need no body: method, source, and a declared
/// `Content-Length` over the limit. The glue runs them before reading the
/// body, so an oversized upload is refused without being buffered.
pub fn precheck(
    config: FrontDoorConfig<'_>,
    method: &str,
    source: &str,
    content_length: Option<u64>,
) -> Result<(), Rejection> {
    if !method.eq_ignore_ascii_case("POST") {
        return Err(Rejection::MethodNotAllowed);
    }
    if !config.sources.contains_key(source) {
        return Err(Rejection::UnknownSource(source.to_string()));
    }
    if content_length.is_some_and(|len| len > config.max_body_bytes) {
        return Err(Rejection::TooLarge {
            limit: config.max_body_bytes,
        });
    }
    Ok(())
}

/// Checks a request: a refusal, or what to do with it.
pub fn accept<H: HeaderLookup + ?Sized>(
    config: FrontDoorConfig<'_>,
    req: &Inbound<'_, H>,
) -> Result<Admission, Rejection> {
    precheck(config, req.method, req.source, Some(req.body.len() as u64))?;
    let Some(source) = config.sources.get(req.source) else {
        return Err(Rejection::UnknownSource(req.source.to_string()));
    };
    let scheme = &source.spec.scheme;
    let request = Request {
        method: req.method,
        url: &signed_url(source.spec.url.as_deref(), req.url),
        headers: req.headers,
        body: req.body,
        form: form::is_form(req.headers.header("content-type")),
    };
    let verdict = verify(
        scheme,
        &source.keys,
        &request,
        req.now_ms.div_euclid(1000),
        source.spec.tolerance_s,
    )
    .map_err(|e| signature_refusal(scheme, req.headers, e))?;
    match verdict {
        Verdict::Verified(verified) => admit(source, req, verified),
        Verdict::Deferred { check, verified } => Ok(Admission::Deferred {
            check,
            public_key: source.public_key.clone(),
            verified,
        }),
    }
}

/// A failed signature check: 401, whatever else is wrong (DESIGN §2's
/// order: the signature before anything the request carries is judged), so
/// the signature limiter counts it. A header-carried delivery id that is no
/// printable ASCII is named in the refusal: header bytes outside ASCII
/// reach the worker already decoded, so a signature that covers the id
/// (standard-webhooks) could never verify, and the sender should learn
/// why. An id that is bad under a signature that holds is a 400 later.
fn signature_refusal<H: HeaderLookup + ?Sized>(
    scheme: &Scheme,
    headers: &H,
    error: SignatureError,
) -> Rejection {
    let bad_id = places::delivery_id(scheme, headers, None)
        .is_some_and(|id| check_delivery_id(scheme, &id).is_err());
    match error {
        SignatureError::Mismatch if bad_id => Rejection::Signature(SignatureError::Malformed {
            header: delivery_id_source(scheme),
            reason: format!("the signature does not match, and this delivery id is not 1-{MAX_DELIVERY_ID_LEN} printable ASCII characters, which no signature over it can match; send a plain ASCII id"),
        }),
        other => Rejection::Signature(other),
    }
}

/// The checks after a WebCrypto check held: the same as after a native MAC.
pub fn accept_signed<H: HeaderLookup + ?Sized>(
    config: FrontDoorConfig<'_>,
    req: &Inbound<'_, H>,
    verified: Verified,
) -> Result<Admission, Rejection> {
    let Some(source) = config.sources.get(req.source) else {
        return Err(Rejection::UnknownSource(req.source.to_string()));
    };
    admit(source, req, verified)
}

/// The body's checks, once the signature held: the body must be a form or
/// JSON; then a handshake is answered, a timestamp in the body checked,
/// and the event built.
fn admit<H: HeaderLookup + ?Sized>(
    source: &Source,
    req: &Inbound<'_, H>,
    verified: Verified,
) -> Result<Admission, Rejection> {
    let scheme = &source.spec.scheme;
    let content_type = req.headers.header("content-type");
    let (body, view) = read_body(req.body, content_type, places::needs_view(scheme))?;
    if let Some(view) = &view {
        if let Some(reply) = handshake::answer(scheme, req.headers, view, source.keys.first()) {
            return Ok(Admission::Handshake(reply));
        }
        check_body_timestamp(
            scheme,
            view,
            req.now_ms.div_euclid(1000),
            source.spec.tolerance_s,
        )
        .map_err(Rejection::Signature)?;
    }
    let delivery_id = match verified.delivery_id {
        Some(id) => Some(id),
        None => places::delivery_id(scheme, req.headers, view.as_ref()),
    };
    match &delivery_id {
        Some(id) => check_delivery_id(scheme, id)?,
        None if scheme.id_required => {
            return Err(Rejection::BadBody(format!(
                "the body has no string {}; {} events always carry one",
                delivery_id_source(scheme),
                scheme.name
            )))
        }
        None => {}
    }
    let key = idempotency_key(&source.spec.name, delivery_id.as_deref(), req.body);
    let mut headers = capture_headers(
        req.header_list
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str())),
    );
    for name in scheme.secret_headers() {
        if let Some(v) = headers.get_mut(&name) {
            *v = REDACTED.to_string();
        }
    }
    Ok(Admission::Event(Accepted {
        event_id: event_id(&key),
        idempotency_key: key,
        source: source.spec.name.clone(),
        delivery_id,
        headers,
        body: body.to_string(),
        answer: scheme.answer,
    }))
}

/// The body as UTF-8 text: a form when its `Content-Type` says so,
/// otherwise JSON whatever the `Content-Type` claims. With `want_view`,
/// also the view JSON Pointers and handshakes read (a form's is the
/// object of its fields); otherwise JSON is only validated, not built into
/// a tree, since a tree of a large body costs allocations on every request.
fn read_body<'b>(
    raw: &'b [u8],
    content_type: Option<&str>,
    want_view: bool,
) -> Result<(&'b str, Option<Value>), Rejection> {
    let bad = |why: String| Rejection::BadBody(why);
    let body = std::str::from_utf8(raw).map_err(|_| {
        bad(
            "body is not UTF-8 text; send JSON, or a form as application/x-www-form-urlencoded"
                .into(),
        )
    })?;
    if form::is_form(content_type) {
        let fields = form::decode(raw).map_err(|e| {
            bad(format!(
                "{}; a body sent as application/x-www-form-urlencoded must be a form",
                e.0
            ))
        })?;
        return Ok((body, Some(form::to_object(fields))));
    }
    let not_json = |e: serde_json::Error| {
        bad(format!(
            "body is not valid JSON (line {}, column {}); send JSON, or a form as application/x-www-form-urlencoded",
            e.line(),
            e.column(),
        ))
    };
    if want_view {
        let view: Value = serde_json::from_str(body).map_err(not_json)?;
        return Ok((body, Some(view)));
    }
    serde_json::from_str::<serde::de::IgnoredAny>(body).map_err(not_json)?;
    Ok((body, None))
}

/// Where a scheme's delivery id comes from, as the refusal names it.
/// The URL `{url}` signs: the source's `"url"` (the URL as configured at the
/// provider, for a relay behind a proxy) with the query the relay received,
/// else the URL as received. The query comes from the request because a
/// provider appends to it what it signs: Twilio's `bodySHA256` for a JSON
/// body is added to the configured URL, so a configured URL alone never
/// carries it. A request without a query signs the configured URL whole.
pub fn signed_url<'a>(configured: Option<&'a str>, received: &'a str) -> std::borrow::Cow<'a, str> {
    let Some(configured) = configured else {
        return received.into();
    };
    match received.split_once('?') {
        Some((_, query)) => {
            let base = configured.split_once('?').map_or(configured, |(b, _)| b);
            format!("{base}?{query}").into()
        }
        None => configured.into(),
    }
}

pub fn delivery_id_source(scheme: &Scheme) -> String {
    scheme.id_source()
}

/// A delivery id becomes part of the idempotency key, of the envelope and
/// of the headers sent downstream, so it must be 1-256 printable ASCII
/// characters (0x20-0x7E). Header bytes outside ASCII arrive here as the
/// characters they map to, and are refused like any other.
pub fn check_delivery_id(scheme: &Scheme, id: &str) -> Result<(), Rejection> {
    let ok = !id.is_empty()
        && id.len() <= MAX_DELIVERY_ID_LEN
        && id.chars().all(|c| (' '..='~').contains(&c));
    if ok {
        Ok(())
    } else {
        Err(Rejection::BadDeliveryId {
            header: delivery_id_source(scheme),
        })
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_signed_url_is_the_configured_one_with_the_query_received() {
        let table: [(&str, Option<&str>, &str, &str); 5] = [
            (
                "no url set",
                None,
                "https://relay.internal/w/t?bodySHA256=ab",
                "https://relay.internal/w/t?bodySHA256=ab",
            ),
            (
                "url set, no query",
                Some("https://hooks.example.com/t"),
                "https://relay.internal/w/t",
                "https://hooks.example.com/t",
            ),
            (
                "twilio appends bodySHA256",
                Some("https://hooks.example.com/t"),
                "https://relay.internal/w/t?bodySHA256=ab",
                "https://hooks.example.com/t?bodySHA256=ab",
            ),
            (
                "a configured query, extended",
                Some("https://hooks.example.com/t?a=1"),
                "https://relay.internal/w/t?a=1&bodySHA256=ab",
                "https://hooks.example.com/t?a=1&bodySHA256=ab",
            ),
            (
                "a configured query, none received",
                Some("https://hooks.example.com/t?a=1"),
                "https://relay.internal/w/t",
                "https://hooks.example.com/t?a=1",
            ),
        ];
        for (case, configured, received, want) in table {
            assert_eq!(super::signed_url(configured, received), want, "{case}");
        }
    }

    use super::*;
    use crate::signature::{
        sign_github, sign_hmac_sha256, sign_standard_webhooks, sign_stripe, KeyForm, SigningKey,
    };
    use serde_json::{json, Value};

    const NOW_MS: i64 = 1_700_000_000_000;
    const NOW_S: i64 = 1_700_000_000;
    const STD_SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

    fn config() -> Sources {
        let env: BTreeMap<String, Value> = [
            ("SOURCES", json!({"std": {"scheme": "standard-webhooks"}, "str": {"scheme": "stripe"}, "gh": {"scheme": "github"}, "gen": {"scheme": "hmac-sha256"}})),
            ("WEBHOOK_SECRET_STD", json!(STD_SECRET)),
            ("WEBHOOK_SECRET_STR", json!("whsec_stripe")),
            ("WEBHOOK_SECRET_GH", json!("gh-secret")),
            ("WEBHOOK_SECRET_GEN", json!("gen-secret")),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        Sources::bind(&crate::receive::sources::load_sources(&env).unwrap(), &env).unwrap()
    }

    fn key(form: KeyForm, secret: &str) -> SigningKey {
        SigningKey::from_secret(form, secret).unwrap()
    }

    /// A correctly signed request for each source, as header pairs.
    fn signed(source: &str, body: &str) -> Vec<(String, String)> {
        let b = body.as_bytes();
        let pairs: Vec<(&str, String)> = match source {
            "std" => vec![
                ("webhook-id", "msg_1".into()),
                ("webhook-timestamp", NOW_S.to_string()),
                (
                    "webhook-signature",
                    sign_standard_webhooks(&key(KeyForm::Whsec, STD_SECRET), "msg_1", NOW_S, b),
                ),
            ],
            "str" => vec![(
                "stripe-signature",
                sign_stripe(&key(KeyForm::Raw, "whsec_stripe"), NOW_S, b),
            )],
            "gh" => vec![
                (
                    "x-hub-signature-256",
                    sign_github(&key(KeyForm::Raw, "gh-secret"), b),
                ),
                ("x-github-delivery", "d-1".into()),
            ],
            "gen" => vec![
                ("x-timestamp", NOW_S.to_string()),
                (
                    "x-signature",
                    sign_hmac_sha256(&key(KeyForm::Raw, "gen-secret"), NOW_S, b),
                ),
            ],
            _ => vec![],
        };
        let mut out: Vec<(String, String)> =
            pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
        out.push(("content-type".into(), "application/json".into()));
        out
    }

    fn run(
        method: &str,
        source: &str,
        headers: &[(String, String)],
        body: &str,
    ) -> Result<Accepted, Rejection> {
        let map: BTreeMap<String, String> = headers.iter().cloned().collect();
        let sources = config();
        let got = accept(
            FrontDoorConfig {
                sources: &sources,
                max_body_bytes: 1000,
            },
            &Inbound {
                method,
                source,
                url: "https://relay.example.com/webhooks/x",
                headers: &map,
                header_list: headers,
                body: body.as_bytes(),
                now_ms: NOW_MS,
            },
        )?;
        match got {
            Admission::Event(a) => Ok(a),
            other => panic!("{source}: not an event: {other:?}"),
        }
    }

    #[test]
    fn a_correctly_signed_request_is_accepted_for_every_scheme() {
        let table = [
            ("std", "{\"a\":1}", "std:msg_1"),
            ("str", "{\"id\":\"evt_9\"}", "str:evt_9"),
            ("gh", "{\"zen\":\"hi\"}", "gh:d-1"),
        ];
        for (source, body, key) in table {
            let got = run("POST", source, &signed(source, body), body).unwrap();
            assert_eq!(got.idempotency_key, key);
            assert_eq!(got.body, body);
            assert_eq!(got.event_id, event_id(key));
        }
        let gen = run("POST", "gen", &signed("gen", "{}"), "{}").unwrap();
        assert!(
            gen.idempotency_key.starts_with("gen:sha256:"),
            "no X-Operation-Id: hashed key"
        );
    }

    #[test]
    fn signatures_never_reach_the_accepted_headers() {
        for source in ["std", "str", "gh", "gen"] {
            let body = "{\"id\":\"evt_1\"}";
            let got = run("POST", source, &signed(source, body), body).unwrap();
            for (name, value) in &got.headers {
                assert!(
                    !name.contains("signature") || value == crate::support::redact::REDACTED,
                    "{source} {name}"
                );
            }
        }
    }

    /// Method, source, headers, body, expected status.
    type Case<'a> = (&'a str, &'a str, Vec<(String, String)>, String, u16);

    #[test]
    fn each_refusal_has_its_status() {
        let ok = signed("std", "{}");
        let table: Vec<Case> = vec![
            ("GET", "std", ok.clone(), "{}".into(), 405),
            ("POST", "nope", ok.clone(), "{}".into(), 404),
            (
                "POST",
                "std",
                ok.clone(),
                format!("{{\"p\":\"{}\"}}", "x".repeat(1000)),
                413,
            ),
            ("POST", "std", vec![], "{}".into(), 401),
            ("POST", "std", ok.clone(), "{\"tampered\":1}".into(), 401),
            (
                "POST",
                "std",
                signed("std", "not json"),
                "not json".into(),
                400,
            ),
            (
                "POST",
                "str",
                signed("str", "{\"no_id\":1}"),
                "{\"no_id\":1}".into(),
                400,
            ),
        ];
        for (method, source, headers, body, status) in table {
            let err = run(method, source, &headers, &body).unwrap_err();
            assert_eq!(err.status(), status, "{method} {source}: {err:?}");
        }
    }

    #[test]
    fn a_stale_signature_says_so_and_never_reveals_the_expected_signature() {
        let body = "{}";
        let mut headers = signed("gen", body);
        let old = NOW_S - 301;
        headers[0].1 = old.to_string();
        headers[1].1 = sign_hmac_sha256(&key(KeyForm::Raw, "gen-secret"), old, body.as_bytes());
        let err = run("POST", "gen", &headers, body).unwrap_err();
        assert_eq!((err.status(), err.code()), (401, "SIGNATURE_STALE"));

        let mut wrong = signed("gen", body);
        wrong[1].1 = "00".repeat(32);
        let err = run("POST", "gen", &wrong, body).unwrap_err();
        let expected = sign_hmac_sha256(&key(KeyForm::Raw, "gen-secret"), NOW_S, body.as_bytes());
        assert!(!err.message().contains(&expected));
        assert_eq!(err.code(), "SIGNATURE_INVALID");
    }

    #[test]
    fn a_duplicate_delivery_gets_the_same_identity() {
        let body = "{\"id\":\"evt_dup\"}";
        let a = run("POST", "str", &signed("str", body), body).unwrap();
        let b = run("POST", "str", &signed("str", body), body).unwrap();
        assert_eq!(
            (a.event_id, a.idempotency_key),
            (b.event_id, b.idempotency_key)
        );
    }

    #[test]
    fn an_unsigned_request_with_a_bad_header_id_is_a_401_naming_the_id() {
        let body = "{\"a\":1}";
        let bad = "\u{e9}\u{ff}\u{80}".to_string();
        let table = [
            ("std", "webhook-id", "webhook-id"),
            ("gh", "x-github-delivery", "X-GitHub-Delivery"),
            ("gen", "x-operation-id", "X-Operation-Id"),
        ];
        for (source, header, named) in table {
            for id in [bad.clone(), "i".repeat(257)] {
                // No signature at all: 401 SIGNATURE_MISSING, never 400.
                let unsigned = vec![
                    (header.to_string(), id.clone()),
                    ("content-type".to_string(), "application/json".to_string()),
                ];
                let err = run("POST", source, &unsigned, body).unwrap_err();
                assert_eq!(err.status(), 401, "{source} {id:?}: {err:?}");
                // A signature that does not match: 401, naming the id.
                let mut forged: Vec<(String, String)> = signed(source, "{\"other\":1}")
                    .into_iter()
                    .filter(|(k, _)| k != header)
                    .collect();
                forged.push((header.to_string(), id.clone()));
                let err = run("POST", source, &forged, body).unwrap_err();
                assert_eq!(
                    (err.status(), err.code()),
                    (401, "SIGNATURE_INVALID"),
                    "{source} {id:?}: {err:?}"
                );
                assert!(err.message().contains(named), "{}", err.message());
            }
        }
    }

    #[test]
    fn a_bad_header_id_is_refused_as_such_once_the_signature_holds() {
        let body = "{\"a\":1}";
        let bad = "\u{e9}\u{ff}\u{80}".to_string();
        // standard-webhooks signs its id: a bad one cannot verify, and the
        // 401 names it. The others sign no id: 400 once the signature holds.
        let table = [
            ("std", "webhook-id", "webhook-id", 401),
            ("gh", "x-github-delivery", "X-GitHub-Delivery", 400),
            ("gen", "x-operation-id", "X-Operation-Id", 400),
        ];
        for (source, header, named, status) in table {
            for id in [bad.clone(), "i".repeat(257)] {
                let mut headers: Vec<(String, String)> = signed(source, body)
                    .into_iter()
                    .filter(|(k, _)| k != header)
                    .collect();
                headers.push((header.to_string(), id.clone()));
                let err = run("POST", source, &headers, body).unwrap_err();
                assert_eq!(err.status(), status, "{source} {id:?}: {err:?}");
                if status == 400 {
                    assert_eq!(err.code(), "BAD_DELIVERY_ID", "{source} {id:?}");
                    assert!(err.message().starts_with(named), "{}", err.message());
                } else {
                    assert!(err.message().contains(named), "{}", err.message());
                }
            }
        }
        assert_eq!(crate::signature::stripe().id_header(), None);
    }

    #[test]
    fn a_delivery_id_must_be_printable_ascii_of_at_most_256_characters() {
        let long = "a".repeat(257);
        let max = "a".repeat(256);
        let table: [(&str, bool); 7] = [
            ("evt_1", true),
            (&max, true),
            ("with space ~", true),
            (&long, false),
            ("\u{e9}\u{ff}\u{80}", false),
            ("tab\there", false),
            ("", false),
        ];
        for scheme in crate::signature::PRESETS.iter() {
            for (id, ok) in table {
                let got = check_delivery_id(scheme, id);
                assert_eq!(got.is_ok(), ok, "{} {id:?}", scheme.name);
                if let Err(r) = got {
                    assert_eq!(r.status(), 400);
                    assert!(r.message().contains(&delivery_id_source(scheme)));
                }
            }
        }
    }
}
