//! `hookrelay verify --source <name> [-c wrangler.toml] [--env <e>] [--at
//! <time>] <request file>`: a captured request judged with the relay's
//! rules and the source's secret (from the environment, else `.dev.vars`
//! beside the config): the signature's verdict and the freshness verdict
//! apart, as of `--at` (default now), and the answer the relay would give.
//! Exit 0 when the relay would take it, 1 when it would refuse it.

use crate::args::{Global, VerifyArgs};
use crate::clock::now_ms;
use crate::failure::{Done, Failure, Outcome};
use crate::local::judge::{judge, Captured, Judgement};
use crate::local::{config_failure, project, request_file};
use crate::show::{instant, print_json};
use crate::time_input::parse_time;
use hookrelay_core::config::one_source::config_for_source;
use hookrelay_core::receive::front_door::signed_url;
use serde_json::json;

pub fn run(g: &Global, a: &VerifyArgs) -> Outcome {
    let at = match &a.at {
        Some(raw) => parse_time(raw, "--at", now_ms())?,
        None => now_ms(),
    };
    let raw = std::fs::read(&a.request).map_err(|e| {
        Failure::usage(
            format!("cannot read {}: {e}", a.request.display()),
            "give the file that holds the captured request",
        )
    })?;
    let req = request_file::parse(&raw).map_err(|e| {
        Failure::usage(format!("{} is not a raw HTTP/1.1 request: {e}", a.request.display()), "save the request as the relay received it: request line, headers, a blank line, the body")
    })?;
    let url = req
        .received_url()
        .map_err(|e| Failure::usage(e, "add the Host header to the capture"))?;
    let project = project::load(&a.files)?;
    let config =
        config_for_source(&project.vars, &a.source).map_err(|e| config_failure(&e, &project))?;
    let captured = Captured {
        method: &req.method,
        url: &url,
        headers: &req.headers,
        body: &req.body,
    };
    let verdict = judge(&config, &a.source, &captured, at);
    if g.json {
        print_json(&json!(verdict));
    } else {
        let source = config
            .sources
            .get(&a.source)
            .expect("config_for_source kept it");
        let signed = signed_url(source.spec.url.as_deref(), &url);
        println!(
            "source     {} (scheme {}, tolerance {}s)",
            a.source, source.spec.scheme.name, source.spec.tolerance_s
        );
        println!("{{url}}      {signed}");
        print_verdicts(&verdict, at);
    }
    Ok(if verdict.accepted() {
        Done::Ok
    } else {
        Done::Problem
    })
}

fn print_verdicts(v: &Judgement, at: i64) {
    println!("signature  {}: {}", v.signature.verdict, v.signature.detail);
    println!(
        "freshness  {}: {} (as of {})",
        v.freshness.verdict,
        v.freshness.detail,
        instant(at)
    );
    let key = v
        .answer
        .idempotency_key
        .as_deref()
        .map_or(String::new(), |k| format!(" (idempotency key {k})"));
    match v.answer.code {
        None => println!(
            "relay      would answer {} {}{key}",
            v.answer.status, v.answer.body
        ),
        Some(code) => println!(
            "relay      would refuse it: {} {code}: {}",
            v.answer.status, v.answer.body
        ),
    }
}
