//! The signed request a downstream receives.
//!
//! It is signed like the generic `hmac-sha256` scheme, so a downstream can
//! verify it with the same few lines: `X-Signature` is the hex HMAC-SHA256
//! of `{X-Timestamp}.{body}` keyed by `DOWNSTREAM_SIGNING_SECRET`, and
//! `X-Operation-Id` is the event id, stable across retries and replays, for
//! the downstream's own dedupe. The key is the destination's own
//! (`DESTINATION_SIGNING_SECRET_<NAME>`) when it has one, so a receiver
//! holding it can verify its calls and forge no other destination's. A
//! destination with `auth` also gets its credential header.

use crate::deliver::destination_keys::AuthHeader;
use crate::signature::{sign_hmac_sha256, SigningKey};

/// Headers for one delivery attempt of `event_id` with `body`, at `now_s`.
/// `content_type` is the one the event arrived with: a form is forwarded
/// as a form, byte-exact (`None`, for an event stored before content types
/// were forwarded, is JSON). `auth` is the destination's credential.
#[allow(clippy::too_many_arguments)]
pub fn signed_headers<'a>(
    event_id: &str,
    idempotency_key: &str,
    source: &str,
    key: &SigningKey,
    now_s: i64,
    body: &[u8],
    content_type: Option<&str>,
    auth: Option<&'a AuthHeader>,
) -> Vec<(&'a str, String)> {
    let mut headers: Vec<(&'a str, String)> =
        Vec::from(signature_headers(event_id, key, now_s, body));
    if let Some(ct) = content_type.filter(|ct| !ct.trim().is_empty()) {
        headers[0].1 = ct.to_string();
    }
    headers.push(("x-hookrelay-source", source.to_string()));
    headers.push(("x-idempotency-key", idempotency_key.to_string()));
    if let Some(a) = auth {
        headers.push((a.name(), a.expose().to_string()));
    }
    headers
}

/// The headers that make any hookrelay POST verifiable as the generic
/// `hmac-sha256` scheme: a JSON content type, `X-Operation-Id` for the
/// receiver's dedupe, `X-Timestamp` and `X-Signature` over `{ts}.{body}`.
/// Deliveries and alerts both use it, so a receiver verifies both alike.
pub fn signature_headers(
    operation_id: &str,
    key: &SigningKey,
    now_s: i64,
    body: &[u8],
) -> [(&'static str, String); 4] {
    [
        ("content-type", "application/json".to_string()),
        ("x-operation-id", operation_id.to_string()),
        ("x-timestamp", now_s.to_string()),
        ("x-signature", sign_hmac_sha256(key, now_s, body)),
    ]
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_events_own_content_type_is_forwarded() {
        let key = SigningKey::from_secret(KeyForm::Raw, "down-secret").unwrap();
        let form = "application/x-www-form-urlencoded; charset=utf-8";
        let table = [
            (Some(form), form),
            (Some(" "), "application/json"),
            (None, "application/json"),
        ];
        for (ct, want) in table {
            let headers = signed_headers("e", "s:1", "s", &key, 0, b"a=1", ct, None);
            assert_eq!(headers[0], ("content-type", want.to_string()), "{ct:?}");
        }
    }

    use super::*;
    use crate::deliver::destination_keys::{auth_header, AuthForm};
    use crate::signature::{hmac_sha256, verify_one, HeaderLookup, KeyForm};

    #[test]
    fn a_credentialed_destination_gets_its_header_after_the_signed_ones() {
        let key = SigningKey::from_secret(KeyForm::Raw, "own-key").unwrap();
        let table = [
            (AuthForm::Bearer, "t0k", ("authorization", "Bearer t0k")),
            (AuthForm::Basic, "u:p", ("authorization", "Basic dTpw")),
            (
                AuthForm::Header("x-api-key".into()),
                "k1",
                ("x-api-key", "k1"),
            ),
        ];
        for (form, secret, (name, value)) in table {
            let auth = auth_header(&form, secret).unwrap();
            let headers = signed_headers("e", "s:1", "s", &key, 0, b"{}", None, Some(&auth));
            assert_eq!(headers.len(), 7, "{form:?}");
            assert_eq!(headers[6], (name, value.to_string()), "{form:?}");
            assert_eq!(headers[3].0, "x-signature");
        }
    }

    #[test]
    fn a_downstream_can_verify_the_request_as_the_generic_scheme() {
        let body = br#"{"a":1}"#;
        let key = SigningKey::from_secret(KeyForm::Raw, "down-secret").unwrap();
        let headers = signed_headers("evt_1", "s:1", "s", &key, 1_700_000_000, body, None, None);
        let pairs: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
        assert_eq!(pairs[..].header("x-operation-id"), Some("evt_1"));
        assert_eq!(pairs[..].header("content-type"), Some("application/json"));
        let verified =
            verify_one(hmac_sha256(), &key, &pairs[..], body, 1_700_000_000, 300).unwrap();
        assert_eq!(verified.delivery_id.as_deref(), Some("evt_1"));
        // Cross-checked with: printf '%s' '1700000000.{"a":1}' | openssl dgst -sha256 -hmac down-secret
        assert_eq!(
            pairs[..].header("x-signature"),
            Some("1d2d5fa64fdaabf38872ecf29745cea8c8ae7f8ff946cee1863d62ea5c77e7e3")
        );
    }
}
