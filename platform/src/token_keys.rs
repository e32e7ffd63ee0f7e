//! The keys a bearer token may be signed with, read from a worker's env:
//! `ADMIN_JWT_SECRET`, and a pull destination's own `PULL_TOKEN_SECRET_<NAME>`
//! when it is set (DESIGN §4: rotating it revokes that destination's pull
//! tokens alone). The rule that picks between them is the core's
//! (`hookrelay_core::admin::token_identity`); this only looks the secret up,
//! once per request, for the destination the token names.

use hookrelay_core::admin::token_identity::{pull_secret_name, TokenKeys};
use std::cell::OnceCell;
use worker::Env;

/// `ADMIN_JWT_SECRET` plus the env to find a pull destination's secret in.
pub struct EnvTokenKeys<'a> {
    admin: &'a [u8],
    env: &'a Env,
    // The one destination a token names, and its secret if set: looked up
    // at the first ask, so a request reads at most one binding.
    pull: OnceCell<(String, Option<Vec<u8>>)>,
}

impl<'a> EnvTokenKeys<'a> {
    /// `admin` is `ADMIN_JWT_SECRET`'s bytes (empty when unset: it then
    /// verifies nothing).
    pub fn new(admin: &'a [u8], env: &'a Env) -> Self {
        Self {
            admin,
            env,
            pull: OnceCell::new(),
        }
    }
}

impl TokenKeys for EnvTokenKeys<'_> {
    fn admin(&self) -> &[u8] {
        self.admin
    }

    fn pull(&self, destination: &str) -> Option<&[u8]> {
        let (named, key) = self.pull.get_or_init(|| {
            let key = self
                .env
                .secret(&pull_secret_name(destination))
                .ok()
                .map(|s| s.to_string().into_bytes())
                .filter(|k| !k.is_empty());
            (destination.to_string(), key)
        });
        // A second destination in one request cannot happen (one token per
        // request); refuse its key rather than lend it another's.
        (named == destination).then_some(key.as_deref()).flatten()
    }
}
