//! Who a bearer token speaks for, for `GET /api/v1/admin/whoami`: any valid
//! token of a known role, not only an admin's, so a client can check the
//! token it holds before it relies on it (`hookrelay login`).
//!
//! The roles are the admin's (every admin route) and a pull consumer's
//! (`"role": "pull"` with the `"destination"` it may pull, DESIGN §4). A
//! pull token is signed with its destination's own secret when that is set
//! ([`pull_secret_name`]; [`TokenKeys::pull`] supplies it), else with the
//! admin's; the destination claim picks the key before the signature is
//! checked (the claim is trusted only once the signature holds). Out of
//! scope: what a role may do (the routes decide), and the clock (passed in).

use crate::admin::jwt::{bearer_token, verify, AuthError, Claims, ADMIN_ROLE};
use crate::support::base64::URL_SAFE_NO_PAD;
use serde::Serialize;
use serde_json::Value;

/// The `role` claim of a pull consumer's token.
pub const PULL_ROLE: &str = "pull";

/// The secret a pull destination's tokens are signed with when it has its
/// own (`PULL_TOKEN_SECRET_<NAME>`): rotating it revokes that destination's
/// pull tokens alone. Named as a source's secret is (upper case, `-` as `_`).
pub fn pull_secret_name(destination: &str) -> String {
    format!(
        "PULL_TOKEN_SECRET_{}",
        destination.to_ascii_uppercase().replace('-', "_")
    )
}

/// The keys a token may be signed with.
pub trait TokenKeys {
    /// `ADMIN_JWT_SECRET`: signs admin tokens, and pull tokens by default.
    fn admin(&self) -> &[u8];
    /// A pull destination's own signing secret, when it has one.
    fn pull(&self, _destination: &str) -> Option<&[u8]> {
        None
    }
}

/// The admin key alone: every deployment today.
impl TokenKeys for [u8] {
    fn admin(&self) -> &[u8] {
        self
    }
}

/// A verified token's identity, as `whoami` answers it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Identity {
    /// Who it was minted for (the audit's actor), when it says.
    pub sub: Option<String>,
    /// `admin` or `pull`.
    pub role: &'static str,
    /// The destination a pull token may pull; absent for an admin.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub destination: Option<String>,
    /// Expiry, unix seconds, as the token's `exp` claim.
    pub exp: i64,
}

/// Verifies the bearer token of `authorization` under the key its claims
/// call for, and says who it is. A genuine token of another role is
/// `Forbidden` (403); anything else wrong is a 401 as for every admin route.
pub fn identify(
    authorization: Option<&str>,
    keys: &(impl TokenKeys + ?Sized),
    now_s: i64,
) -> Result<Identity, AuthError> {
    let (claims, claimed) = verified(authorization, keys, now_s)?;
    match claims.role.as_deref() {
        Some(ADMIN_ROLE) => Ok(Identity {
            sub: claims.sub,
            role: ADMIN_ROLE,
            destination: None,
            exp: claims.exp,
        }),
        Some(PULL_ROLE) => match claimed {
            Some(destination) => Ok(Identity {
                sub: claims.sub,
                role: PULL_ROLE,
                destination: Some(destination),
                exp: claims.exp,
            }),
            None => Err(AuthError::Malformed(
                "a pull token names the destination it may pull as a string destination claim",
            )),
        },
        _ => Err(AuthError::Forbidden),
    }
}

/// Lets a request into an admin route: a genuine, current token whose role
/// is `admin`. A genuine token of another role is `Forbidden` (403) also
/// when it is a pull token signed with its destination's own secret, which
/// the admin key alone would call a bad signature (401).
pub fn authorize_admin(
    authorization: Option<&str>,
    keys: &(impl TokenKeys + ?Sized),
    now_s: i64,
) -> Result<Claims, AuthError> {
    let (claims, claimed) = verified(authorization, keys, now_s)?;
    match (claims.role.as_deref(), claimed) {
        (Some(ADMIN_ROLE), _) => Ok(claims),
        (Some(PULL_ROLE), Some(destination)) => Err(AuthError::PullTokenElsewhere { destination }),
        _ => Err(AuthError::Forbidden),
    }
}

/// The bearer token's claims, verified under the key its destination claim
/// calls for (that destination's own, else the admin's), and that claim.
fn verified(
    authorization: Option<&str>,
    keys: &(impl TokenKeys + ?Sized),
    now_s: i64,
) -> Result<(Claims, Option<String>), AuthError> {
    let token = bearer_token(authorization)?;
    let claimed = destination_claim(token);
    let key = claimed
        .as_deref()
        .and_then(|d| keys.pull(d))
        .unwrap_or_else(|| keys.admin());
    Ok((verify(token, key, now_s)?, claimed))
}

/// Whether the bearer token of `authorization` may pull and ack
/// `destination` (DESIGN §4, "Pulling"), and who it is: an admin may pull
/// any pull destination, a pull token only the one it names (another's
/// is `Forbidden`, 403). `keys` is `None` when `ADMIN_JWT_SECRET` is not
/// set: every token is refused.
pub fn may_pull(
    authorization: Option<&str>,
    keys: Option<&(impl TokenKeys + ?Sized)>,
    destination: &str,
    now_s: i64,
) -> Result<Identity, AuthError> {
    let Some(keys) = keys else {
        bearer_token(authorization)?;
        return Err(AuthError::BadSignature);
    };
    let who = identify(authorization, keys, now_s)?;
    match (who.role, who.destination.as_deref()) {
        (ADMIN_ROLE, _) => Ok(who),
        (PULL_ROLE, Some(d)) if d == destination => Ok(who),
        (PULL_ROLE, Some(d)) => Err(AuthError::PullTokenElsewhere {
            destination: d.to_string(),
        }),
        _ => Err(AuthError::Forbidden),
    }
}

/// The `destination` claim as a string, read without verifying: it only
/// picks the key, and is used once the signature under that key holds.
fn destination_claim(token: &str) -> Option<String> {
    let payload = token.split('.').nth(1)?;
    let bytes = URL_SAFE_NO_PAD.decode(payload).ok()?;
    let text = std::str::from_utf8(&bytes).ok()?;
    match serde_json::from_str::<Value>(text)
        .ok()?
        .get("destination")?
    {
        Value::String(d) => Some(d.clone()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admin::jwt::sign_hs256;
    use serde_json::json;

    const KEY: &[u8] = b"admin-key";
    const NOW: i64 = 1_700_000_000;

    struct WithPull;
    impl TokenKeys for WithPull {
        fn admin(&self) -> &[u8] {
            KEY
        }
        fn pull(&self, destination: &str) -> Option<&[u8]> {
            (destination == "own-key").then_some(&b"pull-key"[..])
        }
    }

    fn bearer(claims: Value, key: &[u8]) -> String {
        format!("Bearer {}", sign_hs256(&claims, key))
    }

    #[test]
    fn an_admin_route_lets_in_an_admin_and_forbids_every_genuine_pull_token() {
        let admin = bearer(json!({"sub": "ann", "role": "admin", "exp": NOW + 60}), KEY);
        assert_eq!(
            authorize_admin(Some(&admin), &WithPull, NOW).map(|c| c.sub),
            Ok(Some("ann".into()))
        );
        for (claims, key) in [
            (
                json!({"role": "pull", "destination": "shared", "exp": NOW + 60}),
                KEY,
            ),
            (
                json!({"role": "pull", "destination": "own-key", "exp": NOW + 60}),
                &b"pull-key"[..],
            ),
        ] {
            let got = authorize_admin(Some(&bearer(claims.clone(), key)), &WithPull, NOW);
            let destination = claims["destination"].as_str().unwrap().to_string();
            let want = AuthError::PullTokenElsewhere { destination };
            assert_eq!(got.map(|_| ()), Err(want.clone()), "{claims}");
            assert_eq!((want.status(), want.code()), (403, "FORBIDDEN"));
            assert!(
                want.message().contains("POST /api/v1/pull/"),
                "{}",
                want.message()
            );
        }
        // A token signed with the admin key for a destination with its own
        // secret was revoked by that secret: a bad signature.
        let revoked = bearer(
            json!({"role": "pull", "destination": "own-key", "exp": NOW + 60}),
            KEY,
        );
        assert_eq!(
            authorize_admin(Some(&revoked), &WithPull, NOW).map(|_| ()),
            Err(AuthError::BadSignature)
        );
    }

    #[test]
    fn a_pull_secret_is_named_after_its_destination() {
        for (destination, name) in [
            ("demo-pull", "PULL_TOKEN_SECRET_DEMO_PULL"),
            ("orders", "PULL_TOKEN_SECRET_ORDERS"),
            ("a_b-c", "PULL_TOKEN_SECRET_A_B_C"),
        ] {
            assert_eq!(pull_secret_name(destination), name);
        }
    }

    #[test]
    fn an_admin_and_a_pull_token_each_say_who_they_are() {
        let admin = bearer(json!({"sub": "ann", "role": "admin", "exp": NOW + 60}), KEY);
        assert_eq!(
            identify(Some(&admin), KEY, NOW),
            Ok(Identity {
                sub: Some("ann".into()),
                role: "admin",
                destination: None,
                exp: NOW + 60
            })
        );
        let pull =
            json!({"sub": "laptop", "role": "pull", "destination": "demo-pull", "exp": NOW + 60});
        let got = identify(Some(&bearer(pull, KEY)), KEY, NOW).unwrap();
        assert_eq!(
            (got.role, got.destination.as_deref()),
            ("pull", Some("demo-pull"))
        );
        let answer = serde_json::to_value(&got).unwrap();
        assert_eq!(
            answer,
            json!({"sub": "laptop", "role": "pull", "destination": "demo-pull", "exp": NOW + 60})
        );
        let answer = serde_json::to_value(identify(Some(&admin), KEY, NOW).unwrap()).unwrap();
        assert!(answer.get("destination").is_none(), "{answer}");
    }

    #[test]
    fn a_pull_token_is_checked_under_its_destination_key_when_it_has_one() {
        let claims = json!({"role": "pull", "destination": "own-key", "exp": NOW + 60});
        assert!(identify(Some(&bearer(claims.clone(), b"pull-key")), &WithPull, NOW).is_ok());
        assert_eq!(
            identify(Some(&bearer(claims, KEY)), &WithPull, NOW),
            Err(AuthError::BadSignature)
        );
        let other = json!({"role": "pull", "destination": "shared", "exp": NOW + 60});
        assert!(identify(Some(&bearer(other, KEY)), &WithPull, NOW).is_ok());
    }

    #[test]
    fn other_roles_and_broken_tokens_are_refused_as_every_admin_route_does() {
        let table = [
            (
                bearer(json!({"role": "viewer", "exp": NOW + 60}), KEY),
                AuthError::Forbidden,
            ),
            (bearer(json!({"exp": NOW + 60}), KEY), AuthError::Forbidden),
            (
                bearer(json!({"role": "admin", "exp": NOW - 1}), KEY),
                AuthError::Expired,
            ),
            (
                bearer(json!({"role": "admin", "exp": NOW + 60}), b"other"),
                AuthError::BadSignature,
            ),
        ];
        for (header, want) in table {
            assert_eq!(identify(Some(&header), KEY, NOW), Err(want), "{header}");
        }
        assert_eq!(identify(None, KEY, NOW), Err(AuthError::Missing));
        let no_destination = bearer(json!({"role": "pull", "exp": NOW + 60}), KEY);
        assert!(matches!(
            identify(Some(&no_destination), KEY, NOW),
            Err(AuthError::Malformed(_))
        ));
    }

    #[test]
    fn an_admin_may_pull_any_destination_and_a_pull_token_only_its_own() {
        let table = [
            (
                Some(bearer(
                    json!({"sub": "ann", "role": "admin", "exp": NOW + 60}),
                    KEY,
                )),
                true,
                Ok("admin"),
            ),
            (
                Some(bearer(json!({"role": "admin", "exp": NOW + 60}), b"other")),
                true,
                Err(401),
            ),
            (
                Some(bearer(json!({"role": "admin", "exp": NOW - 1}), KEY)),
                true,
                Err(401),
            ),
            (
                Some(bearer(
                    json!({"role": "pull", "destination": "inbox", "exp": NOW + 60}),
                    KEY,
                )),
                true,
                Ok("pull"),
            ),
            (
                Some(bearer(
                    json!({"role": "pull", "destination": "outbox", "exp": NOW + 60}),
                    KEY,
                )),
                true,
                Err(403),
            ),
            (
                Some(bearer(json!({"role": "viewer", "exp": NOW + 60}), KEY)),
                true,
                Err(403),
            ),
            (None, true, Err(401)),
            (
                Some(bearer(json!({"role": "admin", "exp": NOW + 60}), KEY)),
                false,
                Err(401),
            ),
        ];
        for (header, keyed, want) in table {
            let keys = keyed.then_some(KEY);
            let got = may_pull(header.as_deref(), keys, "inbox", NOW);
            assert_eq!(
                got.map(|i| i.role).map_err(|e| e.status()),
                want,
                "{header:?}"
            );
        }
    }

    #[test]
    fn another_destinations_pull_token_is_told_which_one_it_may_pull() {
        let outbox = bearer(
            json!({"role": "pull", "destination": "outbox", "exp": NOW + 60}),
            KEY,
        );
        assert_eq!(
            may_pull(Some(&outbox), Some(KEY), "inbox", NOW).map(|_| ()),
            Err(AuthError::PullTokenElsewhere {
                destination: "outbox".into()
            })
        );
    }
}
