//! A captured request judged with the relay's own rules, the way the
//! front door judges it (`hookrelay_core::receive::front_door`): the signature and
//! the freshness as two verdicts, and the answer the relay would give. The
//! step the relay leaves to WebCrypto runs natively (`native_crypto`).
//! Pure: the time to judge at is passed in.

use super::native_crypto::holds;
use hookrelay_core::config::RelayConfig;
use hookrelay_core::receive::front_door::{
    accept, accept_signed, signed_url, Admission, Inbound, Rejection,
};
use hookrelay_core::receive::Source;
use hookrelay_core::signature::answer::on_success;
use hookrelay_core::signature::{
    check_body_timestamp, verify, HeaderLookup, Place, Request, SignatureError, Verdict,
};
use hookrelay_core::support::form::is_form;
use serde::Serialize;
use serde_json::Value;

/// A request as captured: what the relay received.
pub struct Captured<'a> {
    /// The method.
    pub method: &'a str,
    /// The URL as the relay received it (`https://` + Host + path).
    pub url: &'a str,
    /// The headers, lower-case names.
    pub headers: &'a [(String, String)],
    /// The raw body.
    pub body: &'a [u8],
}

/// The two verdicts and the answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Judgement {
    /// Whether the signature (or token) matches, whatever the time.
    pub signature: Check,
    /// Whether the signed timestamp is within the tolerance as of `at`.
    pub freshness: Check,
    /// The relay's answer to this request at that time.
    pub answer: Answer,
}

/// One verdict.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Check {
    /// `valid`, `invalid`, `fresh`, `stale`, or `none` (nothing to judge).
    pub verdict: &'static str,
    /// Why, in words.
    pub detail: String,
}

/// What the relay would answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Answer {
    /// The status.
    pub status: u16,
    /// The stable code of a refusal.
    pub code: Option<&'static str>,
    /// The body: a success's, or a refusal's message.
    pub body: String,
    /// The event's idempotency key, when it would be queued.
    pub idempotency_key: Option<String>,
}

impl Judgement {
    /// Whether the relay would take the request (queue it or answer its
    /// handshake).
    pub fn accepted(&self) -> bool {
        self.answer.code.is_none()
    }
}

/// Judges `req` for `source` of `config` as of `now_ms`.
pub fn judge(config: &RelayConfig, source: &str, req: &Captured<'_>, now_ms: i64) -> Judgement {
    let Some(src) = config.sources.get(source) else {
        let refused = Rejection::UnknownSource(source.to_string());
        return Judgement {
            signature: none("the source is not configured"),
            freshness: none("the source is not configured"),
            answer: refusal(&refused),
        };
    };
    Judgement {
        signature: signature(src, req, now_ms),
        freshness: freshness(src, req, now_ms),
        answer: answer(config, source, req, now_ms),
    }
}

fn none(why: &str) -> Check {
    Check {
        verdict: "none",
        detail: why.into(),
    }
}

fn request<'a>(req: &'a Captured<'a>, url: &'a str) -> Request<'a, [(String, String)]> {
    Request {
        method: req.method,
        url,
        headers: req.headers,
        body: req.body,
        form: is_form(req.headers.header("content-type")),
    }
}

/// The signature alone: checked with a tolerance no timestamp can miss,
/// so a stale request still says whether it was signed right.
fn signature(src: &Source, req: &Captured<'_>, now_ms: i64) -> Check {
    let url = signed_url(src.spec.url.as_deref(), req.url);
    let r = request(req, &url);
    let verdict = verify(
        &src.spec.scheme,
        &src.keys,
        &r,
        now_ms.div_euclid(1000),
        u32::MAX,
    );
    let matched = match verdict {
        Ok(Verdict::Verified(_)) => Ok(()),
        Ok(Verdict::Deferred { check, .. }) => {
            match holds(&check, src.public_key.as_deref(), req.body) {
                true => Ok(()),
                false => Err(SignatureError::Mismatch),
            }
        }
        Err(e) => Err(e),
    };
    match matched {
        Ok(()) => Check {
            verdict: "valid",
            detail: format!(
                "signed with {} by the {} scheme",
                key_word(src),
                src.spec.scheme.name
            ),
        },
        Err(e) => Check {
            verdict: "invalid",
            detail: e.to_string(),
        },
    }
}

fn key_word(src: &Source) -> &'static str {
    match (src.public_key.is_some(), src.keys.len()) {
        (true, _) => "the source's public key",
        (false, 1) => "the source's secret",
        _ => "the source's secret (current or previous)",
    }
}

/// The freshness alone: the timestamp against the tolerance as of `now`.
fn freshness(src: &Source, req: &Captured<'_>, now_ms: i64) -> Check {
    let scheme = &src.spec.scheme;
    let tolerance = src.spec.tolerance_s;
    let now_s = now_ms.div_euclid(1000);
    let Some(rule) = &scheme.timestamp else {
        return none("the scheme signs no timestamp, so a captured request never goes stale");
    };
    let judged = match rule.at {
        Place::Json(_) => body_view(req)
            .ok_or(SignatureError::Mismatch)
            .and_then(|view| check_body_timestamp(scheme, &view, now_s, tolerance).map(|_| ())),
        Place::Header(_) | Place::Part => {
            let url = signed_url(src.spec.url.as_deref(), req.url);
            let r = request(req, &url);
            match verify(scheme, &src.keys, &r, now_s, tolerance) {
                Err(SignatureError::Mismatch) | Ok(_) => Ok(()),
                Err(e) => Err(e),
            }
        }
    };
    match judged {
        Ok(()) => Check {
            verdict: "fresh",
            detail: format!("the timestamp is within the {tolerance}s tolerance"),
        },
        Err(e @ SignatureError::Stale { .. }) => Check {
            verdict: "stale",
            detail: e.to_string(),
        },
        Err(SignatureError::Mismatch) => {
            none("the body is not JSON, so its timestamp cannot be read")
        }
        Err(e) => none(&format!("the timestamp cannot be read: {e}")),
    }
}

fn body_view(req: &Captured<'_>) -> Option<Value> {
    let content_type = req.headers.header("content-type");
    if is_form(content_type) {
        let fields = hookrelay_core::support::form::decode(req.body).ok()?;
        return Some(hookrelay_core::support::form::to_object(fields));
    }
    serde_json::from_slice(req.body).ok()
}

/// The front door's whole answer, the WebCrypto step run natively.
fn answer(config: &RelayConfig, source: &str, req: &Captured<'_>, now_ms: i64) -> Answer {
    let inbound = Inbound {
        method: req.method,
        source,
        url: req.url,
        headers: req.headers,
        header_list: req.headers,
        body: req.body,
        now_ms,
    };
    let admitted = match accept(config.front_door(), &inbound) {
        Ok(Admission::Deferred {
            check,
            public_key,
            verified,
        }) => match holds(&check, public_key.as_deref(), req.body) {
            true => accept_signed(config.front_door(), &inbound, verified),
            false => Err(Rejection::Signature(SignatureError::Mismatch)),
        },
        other => other,
    };
    match admitted {
        Ok(Admission::Event(event)) => {
            let reply = on_success(event.answer, &event.event_id);
            Answer {
                status: reply.status,
                code: None,
                body: reply.body,
                idempotency_key: Some(event.idempotency_key),
            }
        }
        Ok(Admission::Handshake(reply)) => Answer {
            status: reply.status,
            code: None,
            body: reply.body,
            idempotency_key: None,
        },
        Ok(Admission::Deferred { .. }) => unreachable!("the deferred check ran above"),
        Err(r) => refusal(&r),
    }
}

fn refusal(r: &Rejection) -> Answer {
    Answer {
        status: r.status(),
        code: Some(r.code()),
        body: r.message(),
        idempotency_key: None,
    }
}
