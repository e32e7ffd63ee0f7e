//! A destination's secrets (DESIGN §1): the credential its `auth` sends,
//! from `DESTINATION_SECRET_<NAME>`, and its own signing key, from
//! `DESTINATION_SIGNING_SECRET_<NAME>`, which signs its calls instead of
//! `DOWNSTREAM_SIGNING_SECRET`. Read once at startup; a destination with
//! `auth` whose secret is missing or unusable is a configuration error
//! naming the secret (never its value). Neither value is ever printed:
//! `Debug` redacts both.

use crate::signature::SigningKey;
use crate::support::base64::STANDARD;
use std::fmt;

/// How a destination's credential is sent (`"auth"`), its value being the
/// secret `DESTINATION_SECRET_<NAME>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthForm {
    /// `bearer`: `Authorization: Bearer <secret>`.
    Bearer,
    /// `basic`: the secret is `user:password`, sent as `Authorization:
    /// Basic <base64 of its UTF-8 bytes>` (RFC 7617).
    Basic,
    /// `header:<Name>`: the secret as it is, in header `<Name>` (kept
    /// lower-cased).
    Header(String),
}

/// The header a credentialed destination's calls carry. Its value is a
/// secret: `Debug` never prints it and nothing serializes it.
#[derive(Clone, PartialEq, Eq)]
pub struct AuthHeader {
    name: String,
    value: String,
}

impl AuthHeader {
    /// The header's name, lower-cased (`authorization`, `x-api-key`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The header's value, for the one call that sends it.
    pub fn expose(&self) -> &str {
        &self.value
    }
}

impl fmt::Debug for AuthHeader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "AuthHeader({}: <secret>)", self.name)
    }
}

/// One destination's keys, as its secrets give them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DestinationKeys {
    /// The credential header, for a destination with `auth`.
    pub auth: Option<AuthHeader>,
    /// Its own signing key, when `DESTINATION_SIGNING_SECRET_<NAME>` is set.
    pub signing: Option<SigningKey>,
}

/// The header `form` sends with `secret`. Surrounding whitespace (a
/// newline left by `echo … | wrangler secret put`) is trimmed; what is
/// refused is named without repeating any of the secret.
pub fn auth_header(form: &AuthForm, secret: &str) -> Result<AuthHeader, String> {
    let secret = secret.trim();
    if secret.is_empty() {
        return Err("is empty".into());
    }
    // A header value is visible ASCII, spaces and tabs (RFC 9110 §5.5);
    // anything else would be refused by the runtime at every call.
    if !secret
        .bytes()
        .all(|b| b == b'\t' || (0x20..0x7f).contains(&b))
    {
        return Err(
            "holds a control or non-ASCII character, which no HTTP header can carry".into(),
        );
    }
    let (name, value) = match form {
        AuthForm::Bearer => ("authorization".to_string(), format!("Bearer {secret}")),
        AuthForm::Basic => {
            // RFC 7617: the user id cannot hold a colon; the first one
            // separates it from the password.
            if !secret.contains(':') {
                return Err("must be user:password for \"auth\": \"basic\"".into());
            }
            (
                "authorization".to_string(),
                format!("Basic {}", STANDARD.encode(secret.as_bytes())),
            )
        }
        AuthForm::Header(name) => (name.clone(), secret.to_string()),
    };
    Ok(AuthHeader { name, value })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::deliver::destinations::load_keys;
    use crate::deliver::destinations::parse_destinations;
    use crate::support::env::test_env as env;
    use serde_json::json;

    #[test]
    fn each_auth_form_sends_its_header() {
        let table = [
            (
                AuthForm::Bearer,
                "tok_123",
                "authorization",
                "Bearer tok_123",
            ),
            // RFC 7617 §2's example: Aladdin / open sesame.
            (
                AuthForm::Basic,
                "Aladdin:open sesame",
                "authorization",
                "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==",
            ),
            (
                AuthForm::Basic,
                "u:p:w\n",
                "authorization",
                "Basic dTpwOnc=",
            ),
            (
                AuthForm::Header("x-api-key".into()),
                " key-1 ",
                "x-api-key",
                "key-1",
            ),
        ];
        for (form, secret, name, value) in table {
            let h = auth_header(&form, secret).unwrap();
            assert_eq!((h.name(), h.expose()), (name, value), "{form:?}");
        }
    }

    #[test]
    fn an_unusable_secret_is_refused_without_repeating_it() {
        let table = [
            (AuthForm::Bearer, "  ", "is empty"),
            (AuthForm::Basic, "just-a-password", "user:password"),
            (AuthForm::Bearer, "tok\r\nX-Evil: 1", "control"),
            (AuthForm::Bearer, "tökén", "non-ASCII"),
        ];
        for (form, secret, fragment) in table {
            let e = auth_header(&form, secret).unwrap_err();
            assert!(e.contains(fragment), "{secret:?}: {e}");
            let secret = secret.trim();
            assert!(secret.is_empty() || !e.contains(secret), "{e}");
        }
    }

    #[test]
    fn a_destination_with_auth_needs_its_secret_and_its_signing_key_is_optional() {
        let ds = parse_destinations(
            &json!({"crm": {"url": "https://crm.example/h", "auth": "bearer"}, "plain": {"url": "https://p.example/h"}}),
            10_000,
        )
        .unwrap();
        let err = load_keys(&env(&[]), &ds).unwrap_err();
        assert_eq!(err.key, "DESTINATION_SECRET_CRM");
        assert!(
            err.problem.contains("'crm'")
                && err
                    .problem
                    .contains("wrangler secret put DESTINATION_SECRET_CRM"),
            "{err}"
        );
        let keys = load_keys(
            &env(&[
                ("DESTINATION_SECRET_CRM", json!("crm-token-value")),
                ("DESTINATION_SIGNING_SECRET_PLAIN", json!("plain-signing")),
            ]),
            &ds,
        )
        .unwrap();
        assert_eq!(
            keys[0].auth.as_ref().unwrap().expose(),
            "Bearer crm-token-value"
        );
        assert!(keys[0].signing.is_none());
        assert!(keys[1].auth.is_none());
        assert_eq!(
            keys[1].signing.as_ref().unwrap().as_bytes(),
            b"plain-signing"
        );
        let printed = format!("{keys:?}");
        assert!(
            !printed.contains("crm-token-value") && !printed.contains("plain-signing"),
            "{printed}"
        );
        let bad =
            load_keys(&env(&[("DESTINATION_SECRET_CRM", json!("x\u{7}y"))]), &ds).unwrap_err();
        assert_eq!(bad.key, "DESTINATION_SECRET_CRM");
        assert!(!bad.to_string().contains("x\u{7}y"));
    }
}
