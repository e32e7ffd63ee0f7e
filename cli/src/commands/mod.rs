//! One module per command; this one sends each parsed command to its
//! module, and holds what the reading commands share: reaching the relay
//! with a token, and paging through a listing (one page with its
//! `next_cursor`, or `--all`).

mod completion;
mod config_check;
mod dlq;
mod events;
mod job_watch;
mod jobs;
mod listen;
mod login;
mod replay;
mod send;
mod status;
mod story;
mod tail;
mod token;
mod verify;

use crate::args::{Cli, Command, ConfigCommand, Global, Paging};
use crate::failure::{Done, Failure, Outcome};
use crate::http::Relay;
use crate::show;
use crate::target;
use serde_json::{json, Value};

/// Runs the command the line asked for.
pub fn run(cli: Cli) -> Outcome {
    let g = &cli.global;
    match cli.command {
        Command::Login(a) => login::run(g, &a),
        Command::Status => status::run(g),
        Command::Dlq(c) => dlq::run(g, c),
        Command::Replay(a) => replay::run(g, &a),
        Command::Jobs(c) => jobs::run(g, c),
        Command::Events(c) => events::run(g, c),
        Command::Tail(a) => tail::run(g, &a),
        Command::Listen(a) => listen::run(g, &a),
        Command::Verify(a) => verify::run(g, &a),
        Command::Config(ConfigCommand::Check { files }) => config_check::run(g, &files),
        Command::Send(a) => send::run(g, &a),
        Command::Token(a) => token::run(&a),
        Command::Completion(a) => completion::run(&a),
    }
}

/// The relay, with the token the flags, environment or profile give.
pub fn connect(g: &Global) -> Result<Relay, Failure> {
    let (url, token) = target::resolve(g)?.require_token()?;
    Relay::new(&url, Some(token))
}

/// A listing's query: the pairs given, and the page flags.
pub fn with_paging(
    mut query: Vec<(&'static str, String)>,
    paging: &Paging,
) -> Vec<(&'static str, String)> {
    if let Some(limit) = paging.limit {
        query.push(("limit", limit.to_string()));
    }
    if let Some(cursor) = &paging.cursor {
        query.push(("cursor", cursor.clone()));
    }
    query
}

/// Optional flags as query pairs (absent ones left out).
pub fn pairs(list: &[(&'static str, Option<String>)]) -> Vec<(&'static str, String)> {
    list.iter()
        .filter_map(|(k, v)| v.clone().map(|v| (*k, v)))
        .collect()
}

/// Reads a listing at `path` and prints it: with `--all`, every page (as
/// one JSON array with `--json`); else one page, its `next_cursor` said
/// (kept in the JSON). `render` draws items on a terminal.
pub fn list(
    relay: &Relay,
    g: &Global,
    path: &str,
    query: Vec<(&'static str, String)>,
    paging: &Paging,
    render: impl Fn(&[Value]) -> String,
) -> Outcome {
    if !paging.all {
        let data = relay.get(path, &with_paging(query, paging))?;
        if g.json {
            show::print_json(&data);
            return Ok(Done::Ok);
        }
        let items = data["items"].as_array().cloned().unwrap_or_default();
        print_items(&items, &render);
        if let Some(next) = data["next_cursor"].as_str() {
            println!("more: add --cursor {next} for the next page, or --all for every page");
        }
        return Ok(Done::Ok);
    }
    let items = every_page(relay, path, query, paging.limit)?;
    if g.json {
        show::print_json(&json!(items));
    } else {
        print_items(&items, &render);
    }
    Ok(Done::Ok)
}

fn print_items(items: &[Value], render: &impl Fn(&[Value]) -> String) {
    if items.is_empty() {
        println!("(none)");
    } else {
        println!("{}", render(items));
    }
}

/// Every item of a listing, following `next_cursor` to the end.
pub fn every_page(
    relay: &Relay,
    path: &str,
    query: Vec<(&'static str, String)>,
    limit: Option<u32>,
) -> Result<Vec<Value>, Failure> {
    let mut items = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut q = query.clone();
        q.push(("limit", limit.unwrap_or(200).to_string()));
        if let Some(c) = &cursor {
            q.push(("cursor", c.clone()));
        }
        let data = relay.get(path, &q)?;
        items.extend(data["items"].as_array().cloned().unwrap_or_default());
        match data["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_string()),
            None => return Ok(items),
        }
    }
}

/// A path segment for an id typed by the operator: refused when it could
/// change the path (a `/`, `?`, `#`, `%` or whitespace).
pub fn id_segment(id: &str, what: &str) -> Result<String, Failure> {
    let plain =
        !id.is_empty() && !id.contains(['/', '?', '#', '%']) && !id.contains(char::is_whitespace);
    if plain {
        return Ok(id.to_string());
    }
    Err(Failure::usage(
        format!("{id:?} is not {what}"),
        "give the id as the listing shows it",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_that_would_change_the_path_are_refused() {
        assert_eq!(id_segment("dlq_1", "an entry id").unwrap(), "dlq_1");
        for bad in ["", "../x", "a?b", "a#b", "a%2f", "a b"] {
            assert_eq!(
                id_segment(bad, "an entry id").unwrap_err().exit_code(),
                2,
                "{bad}"
            );
        }
        let q = pairs(&[("status", Some("pending".into())), ("source", None)]);
        assert_eq!(q, vec![("status", "pending".to_string())]);
        let paging = Paging {
            limit: Some(5),
            cursor: Some("c1.x".into()),
            all: false,
        };
        assert_eq!(
            with_paging(vec![], &paging),
            vec![("limit", "5".into()), ("cursor", "c1.x".into())]
        );
    }
}
