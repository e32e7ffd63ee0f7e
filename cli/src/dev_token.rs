//! The development token of a loopback relay: with no token anywhere and
//! a relay on this machine (`npm start`), the CLI mints one from the
//! project's `.dev.vars`, as `npm run admin-token` does. Never for any
//! other host: `target.rs` asks only for a loopback URL.

use crate::failure::Failure;
use crate::mint::{mint, Claims};
use crate::token::Token;
use hookrelay_core::config::build_check::parse_dev_vars;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// How long a development token lives.
const DEV_TTL_S: i64 = 3600;

/// The project's dotenv file: from the current directory up, the first
/// folder with a `wrangler.toml`, its `.dev.vars`, else its
/// `.dev.vars.example` (which `npm start` copies to `.dev.vars`).
pub fn project_dev_vars() -> Option<PathBuf> {
    let start = std::env::current_dir().ok()?;
    start
        .ancestors()
        .filter(|d| d.join("wrangler.toml").is_file())
        .find_map(|d| {
            [".dev.vars", ".dev.vars.example"]
                .iter()
                .map(|f| d.join(f))
                .find(|p| p.is_file())
        })
}

/// A development admin token from the project's `.dev.vars`, and the file
/// it came from; `None` when there is no project here.
pub fn mint_for_loopback() -> Result<Option<(Token, PathBuf)>, Failure> {
    let Some(file) = project_dev_vars() else {
        return Ok(None);
    };
    let secret = admin_secret(&file)?;
    let sub = std::env::var("USER")
        .ok()
        .filter(|u| crate::mint::check_sub(u).is_ok());
    let claims = Claims {
        sub: sub.as_deref().unwrap_or("local-admin"),
        role: "admin",
        destination: None,
        ttl_s: DEV_TTL_S,
    };
    let token = mint(secret.as_bytes(), &claims, crate::clock::now_ms() / 1000);
    Ok(Some((Token::new(token), file)))
}

fn admin_secret(file: &Path) -> Result<String, Failure> {
    let text = std::fs::read_to_string(file).map_err(|e| {
        Failure::usage(
            format!("cannot read {}: {e}", file.display()),
            "check the file, or log in with `hookrelay login`",
        )
    })?;
    match parse_dev_vars(&text).get("ADMIN_JWT_SECRET") {
        Some(Value::String(s)) if !s.is_empty() => Ok(s.clone()),
        _ => Err(Failure::usage(
            format!(
                "{} has no ADMIN_JWT_SECRET to mint a development token with",
                file.display()
            ),
            "add it (see .dev.vars.example), or log in with `hookrelay login`",
        )),
    }
}
