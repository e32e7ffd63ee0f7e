//! The admin API's HS256 verifier on arbitrary Authorization headers and
//! tokens: `authorize` and `verify` never panic, an empty key verifies
//! nothing, no error text quotes the token, and what `sign_hs256` mints
//! always passes the signature check.
#![no_main]

use hookrelay_core::admin::jwt::{authorize, sign_hs256, verify, AuthError, ADMIN_ROLE};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

/// The `ADMIN_JWT_SECRET` the seeds are signed with.
const KEY: &[u8] = b"fuzz-admin-secret";
/// The worker clock: the seeds expire after it.
const NOW_S: i64 = 1_700_000_000;

fn check_error(token: &str, err: &AuthError) {
    let message = err.message();
    assert!(matches!(err.status(), 401 | 403));
    assert!(!err.code().is_empty());
    // Error texts contain no '.', so a dotted token can only be quoted.
    if token.contains('.') {
        assert!(!message.contains(token), "error text quotes the token");
    }
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let text = text.as_ref();

    // The whole input as the Authorization header value.
    match authorize(Some(text), KEY, NOW_S) {
        Ok(claims) => {
            assert_eq!(claims.role.as_deref(), Some(ADMIN_ROLE));
            assert!(claims.exp > NOW_S);
        }
        Err(e) => check_error(text, &e),
    }

    // The whole input as a bare token.
    match verify(text, KEY, NOW_S) {
        Ok(claims) => {
            assert!(claims.exp > NOW_S);
            assert!(claims.nbf.is_none_or(|nbf| nbf <= NOW_S));
            // A verified token behind `Bearer ` gets the same answer from authorize.
            let header = format!("Bearer {text}");
            let authorized = authorize(Some(&header), KEY, NOW_S);
            if claims.role.as_deref() == Some(ADMIN_ROLE) {
                assert_eq!(authorized, Ok(claims));
            } else {
                assert_eq!(authorized, Err(AuthError::Forbidden));
            }
        }
        Err(e) => check_error(text, &e),
    }

    // A missing secret locks the API rather than opening it.
    assert!(verify(text, b"", NOW_S).is_err());
    assert!(authorize(Some(text), b"", NOW_S).is_err());

    // Any JSON object we sign as claims gets past the signature check.
    if let Ok(claims @ Value::Object(_)) = serde_json::from_slice::<Value>(data) {
        let token = sign_hs256(&claims, KEY);
        let got = verify(&token, KEY, NOW_S);
        assert!(
            !matches!(
                got,
                Err(AuthError::BadSignature | AuthError::UnsupportedAlgorithm(_))
            ),
            "a token we minted was refused: {got:?}"
        );
        assert_eq!(verify(&token, b"another key", NOW_S).ok(), None);
    }
});
