//! `hookrelay send <source> [--body <json> | --file <f>] [--form]`: signs a
//! test webhook as the source's provider would (its secret as for
//! `verify`; a fresh delivery id each time) and POSTs it to the relay's
//! `/webhooks/<source>`, printing the status and the answer (with
//! `--json`, the answer alone). A public-key source is refused: the relay
//! holds only the provider's public key. No token is sent.

use crate::args::{Global, SendArgs};
use crate::clock::now_ms;
use crate::failure::{Done, Failure, Outcome};
use crate::http::Relay;
use crate::local::provider_sign::{default_body, sign_request, Unsigned};
use crate::local::{config_failure, project};
use crate::target;
use hookrelay_core::config::one_source::config_for_source;
use sha2::Digest;

pub fn run(g: &Global, a: &SendArgs) -> Outcome {
    let project = project::load(&a.files)?;
    let config =
        config_for_source(&project.vars, &a.source).map_err(|e| config_failure(&e, &project))?;
    let source = config
        .sources
        .get(&a.source)
        .expect("config_for_source kept it");
    let now = now_ms();
    let delivery_id = fresh_id(now);
    let body = match (&a.body, &a.file) {
        (Some(text), _) => text.clone().into_bytes(),
        (None, Some(path)) => std::fs::read(path).map_err(|e| {
            Failure::usage(
                format!("cannot read --file {}: {e}", path.display()),
                "give a file that holds the body",
            )
        })?,
        (None, None) => default_body(&source.spec.scheme, &delivery_id, now),
    };
    let base = target::resolve(g)?.url;
    let unsigned = Unsigned {
        base: &base,
        body: &body,
        form: a.form,
        delivery_id: &delivery_id,
        now_ms: now,
    };
    let out = sign_request(source, &unsigned).map_err(|e| {
        Failure::usage(
            format!("cannot sign for {}: {e}", a.source),
            "send to a source keyed by a secret",
        )
    })?;
    let relay = Relay::new(&base, None)?;
    let path = out.url.strip_prefix(&base).unwrap_or(&out.url).to_string();
    let (status, answer) = relay.public("POST", &path, &out.headers, &body)?;
    if g.json {
        println!("{answer}");
    } else {
        println!("{status} {answer}");
    }
    if (200..300).contains(&status) {
        return Ok(Done::Ok);
    }
    Err(Failure::failed(
        format!("the relay refused the test webhook ({status})"),
        "its answer above says which check failed; `hookrelay config check` shows the source's configuration",
    ))
}

/// A delivery id never sent before: the time and the process, hashed.
fn fresh_id(now_ms: i64) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let seed = format!("{now_ms}:{nanos}:{}", std::process::id());
    let digest = sha2::Sha256::digest(seed.as_bytes());
    let hex: String = digest.iter().take(12).map(|b| format!("{b:02x}")).collect();
    format!("hookrelay_test_{hex}")
}
