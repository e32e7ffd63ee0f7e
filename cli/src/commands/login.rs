//! `hookrelay login --url <relay> [--profile <name>]`: takes a token (from
//! `--token-file`, `HOOKRELAY_TOKEN`, or standard input; with `--mint`,
//! minted here from `ADMIN_JWT_SECRET` on standard input), checks it with
//! `GET /api/v1/admin/whoami`, and keeps the URL and the token as a
//! profile in a file only its owner may read. The token is never printed.

use crate::args::{Global, LoginArgs};
use crate::clock::now_ms;
use crate::failure::{Done, Failure, Outcome};
use crate::http::Relay;
use crate::mint::{check_sub, mint, parse_ttl, secret_from_stdin, Claims, ADMIN_TTL_S};
use crate::profiles::{Profile, Store};
use crate::show::{age, cell};
use crate::target::{check_url, read_token_file, transport_allows, DEFAULT_URL};
use crate::token::Token;
use std::io::{BufRead, IsTerminal};

pub fn run(g: &Global, a: &LoginArgs) -> Outcome {
    let url = g
        .url
        .clone()
        .or_else(|| {
            std::env::var("HOOKRELAY_URL")
                .ok()
                .filter(|u| !u.is_empty())
        })
        .unwrap_or_else(|| DEFAULT_URL.into());
    let url = url.trim_end_matches('/').to_string();
    check_url(&url)?;
    transport_allows(&url)?;
    let token = match a.mint {
        true => minted(a)?,
        false => given(g)?,
    };
    let mut store = Store::load()?;
    let name = g.profile.clone().unwrap_or_else(|| "default".into());
    let who = Relay::new(&url, Some(token.clone()))?.get("whoami", &[])?;
    store.save(
        &name,
        Profile {
            url: url.clone(),
            token: token.reveal().to_string(),
        },
    )?;
    if g.json {
        crate::show::print_json(&who);
    } else {
        let exp = who["exp"]
            .as_i64()
            .map_or("-".into(), |s| age(s * 1000, now_ms()));
        println!(
            "logged in to {url} as {} (role {}, expires {exp}); kept as profile {name:?} in {}",
            cell(&who["sub"]),
            cell(&who["role"]),
            store.path.display()
        );
    }
    Ok(Done::Ok)
}

/// The token given: `--token-file`, `HOOKRELAY_TOKEN`, else standard input
/// (one line, asked for on a terminal).
fn given(g: &Global) -> Result<Token, Failure> {
    if let Some(path) = &g.token_file {
        return read_token_file(path);
    }
    if let Some(t) = std::env::var("HOOKRELAY_TOKEN")
        .ok()
        .filter(|t| !t.trim().is_empty())
    {
        return Ok(Token::new(t.trim().to_string()));
    }
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        eprint!("paste the token, then press Enter: ");
    }
    let mut line = String::new();
    stdin.lock().read_line(&mut line).map_err(|e| {
        Failure::usage(
            format!("cannot read the token from standard input: {e}"),
            "pipe it in, or use --token-file",
        )
    })?;
    let line = line.trim();
    if line.is_empty() {
        return Err(Failure::usage(
            "no token on standard input",
            "pipe one in (`npm run -s admin-token -- --sub you | hookrelay login --url …`), use --token-file, or --mint",
        ));
    }
    Ok(Token::new(line.to_string()))
}

/// A token minted here from `ADMIN_JWT_SECRET` on standard input.
fn minted(a: &LoginArgs) -> Result<Token, Failure> {
    let sub = a.sub.clone().ok_or_else(|| {
        Failure::usage(
            "--mint needs --sub <your name>",
            "the audit records it as the actor of every decision",
        )
    })?;
    check_sub(&sub)?;
    let ttl_s = parse_ttl(&a.ttl, ADMIN_TTL_S)?;
    let secret = secret_from_stdin("ADMIN_JWT_SECRET")?;
    let claims = Claims {
        sub: &sub,
        role: "admin",
        destination: None,
        ttl_s,
    };
    Ok(Token::new(mint(&secret, &claims, now_ms() / 1000)))
}
