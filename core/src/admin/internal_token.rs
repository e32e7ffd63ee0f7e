//! The short-lived token the DLQ worker presents to the relay's internal
//! replay route.
//!
//! A service binding lands on the relay's public fetch handler, so the
//! route must prove its caller: an HS256 token signed with
//! `RELAY_INTERNAL_SECRET` (set in both workers), with the internal role
//! and a one-minute lifetime. An admin token has the wrong role and is
//! refused, so holding the admin secret alone does not reach the route.

use crate::admin::jwt::{sign_hs256, verify, AuthError, Claims};
use serde_json::json;

/// The role the internal route requires.
pub const INTERNAL_ROLE: &str = "relay-internal";
/// The secret both workers hold.
pub const SECRET_NAME: &str = "RELAY_INTERNAL_SECRET";
/// How long a minted token is valid.
pub const LIFETIME_S: i64 = 60;

/// A token for one call, minted at `now_s`.
pub fn mint(key: &[u8], now_s: i64) -> String {
    sign_hs256(
        &json!({"sub": "hookrelay-dlq", "role": INTERNAL_ROLE, "iat": now_s, "exp": now_s + LIFETIME_S}),
        key,
    )
}

/// Lets a call into the internal route: a `Bearer` token that verifies
/// under `key`, is current, and carries the internal role.
pub fn authorize_internal(
    authorization: Option<&str>,
    key: &[u8],
    now_s: i64,
) -> Result<Claims, AuthError> {
    let token = authorization
        .map(str::trim)
        .and_then(|h| {
            h.strip_prefix("Bearer ")
                .or_else(|| h.strip_prefix("bearer "))
        })
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .ok_or(AuthError::Missing)?;
    let claims = verify(token, key, now_s)?;
    if claims.role.as_deref() != Some(INTERNAL_ROLE) || claims.exp > now_s + LIFETIME_S {
        return Err(AuthError::Forbidden);
    }
    Ok(claims)
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &[u8] = b"internal-test-key";

    #[test]
    fn only_a_current_internal_token_under_the_key_is_let_in() {
        let good = format!("Bearer {}", mint(KEY, 1_000));
        let admin = format!(
            "Bearer {}",
            sign_hs256(&json!({"role": "admin", "exp": 1_030}), KEY)
        );
        let long_lived = format!(
            "Bearer {}",
            sign_hs256(&json!({"role": INTERNAL_ROLE, "exp": 1_000_000}), KEY)
        );
        let table: [(Option<&str>, &[u8], i64, bool); 7] = [
            (Some(&good), KEY, 1_000, true),
            (Some(&good), KEY, 1_059, true),
            (Some(&good), KEY, 1_060, false),
            (Some(&good), b"other-key", 1_000, false),
            (Some(&admin), KEY, 1_000, false),
            (Some(&long_lived), KEY, 1_000, false),
            (None, KEY, 1_000, false),
        ];
        for (header, key, now, ok) in table {
            assert_eq!(
                authorize_internal(header, key, now).is_ok(),
                ok,
                "{header:?} at {now}"
            );
        }
        assert!(
            authorize_internal(Some(&good), b"", 1_000).is_err(),
            "an empty key opens nothing"
        );
    }
}
