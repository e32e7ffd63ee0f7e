//! `hookrelay token --sub <name> [--ttl 12h] [--role admin|pull
//! --destination <d>]`: mints a token from the secret on standard input
//! (`ADMIN_JWT_SECRET`, or a pull destination's `PULL_TOKEN_SECRET_<NAME>`)
//! and writes it to standard output alone on its line: the one command
//! that prints a token.

use crate::args::{Role, TokenArgs};
use crate::clock::now_ms;
use crate::failure::{Done, Outcome};
use crate::mint::{check_sub, mint, parse_ttl, secret_from_stdin, Claims, ADMIN_TTL_S, PULL_TTL_S};
use hookrelay_core::admin::token_identity::pull_secret_name;

pub fn run(a: &TokenArgs) -> Outcome {
    check_sub(&a.sub)?;
    let (role, range, secret_name) = match a.role {
        Role::Admin => ("admin", ADMIN_TTL_S, "ADMIN_JWT_SECRET".to_string()),
        Role::Pull => {
            let d = a.destination.as_deref().unwrap_or_default();
            let name = pull_secret_name(d);
            ("pull", PULL_TTL_S, format!("{name} (or ADMIN_JWT_SECRET)"))
        }
    };
    let ttl_s = parse_ttl(&a.ttl, range)?;
    let secret = secret_from_stdin(&secret_name)?;
    let claims = Claims {
        sub: &a.sub,
        role,
        destination: a.destination.as_deref().filter(|_| a.role == Role::Pull),
        ttl_s,
    };
    println!("{}", mint(&secret, &claims, now_ms() / 1000));
    Ok(Done::Ok)
}
