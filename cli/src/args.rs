//! The command line as clap reads it: every command, its flags and its
//! help. What each command does is `commands/`; this file only says what
//! may be typed.

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

/// hookrelay: status, dead letters, replays, jobs, event stories and a live
/// tail of a relay, over its public HTTP surface; and the relay's own rules
/// for checking a configuration or a captured request, locally.
#[derive(Parser, Debug)]
#[command(name = "hookrelay", version, propagate_version = true)]
#[command(
    after_help = "Where and who: --url (or HOOKRELAY_URL, default http://127.0.0.1:8787); the token from \
--token-file, HOOKRELAY_TOKEN, or the profile `hookrelay login` stored. Against a loopback relay with no \
token, a development token is minted from the project's .dev.vars.\n\nExit status: 0 done, 1 the operation \
failed or found a problem, 2 a usage error."
)]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,
    #[command(subcommand)]
    pub command: Command,
}

/// The flags every command takes.
#[derive(Args, Debug, Clone, Default)]
pub struct Global {
    /// The relay's URL [env: HOOKRELAY_URL] [default: http://127.0.0.1:8787, or the profile's]
    #[arg(long, global = true, value_name = "URL")]
    pub url: Option<String>,
    /// Read the token from this file (never a plain --token flag: shell history and `ps` keep those)
    #[arg(long, global = true, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// The stored login to use [env: HOOKRELAY_PROFILE] [default: default]
    #[arg(long, global = true, value_name = "NAME")]
    pub profile: Option<String>,
    /// Print the API's data as JSON, unchanged (tail: one object per line)
    #[arg(long, global = true)]
    pub json: bool,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Check a token against a relay and keep it (token on standard input, or --mint)
    Login(LoginArgs),
    /// The relay at a glance: depth, oldest pending, ingress, dominant code, destinations, firing alarms
    Status,
    /// Dead letters: list, show, groups, and one decision at a time
    #[command(subcommand)]
    Dlq(DlqCommand),
    /// Replay the dead letters a filter matches, as a durable, paced, canaried job
    Replay(ReplayArgs),
    /// Replay, archive and discard jobs: list, show, watch, steer
    #[command(subcommand)]
    Jobs(JobsCommand),
    /// Did a webhook arrive, and its story as a timeline
    #[command(subcommand)]
    Events(EventsCommand),
    /// Follow what happens from now on: events accepted, deliveries settled, dead letters
    Tail(TailArgs),
    /// Forward a pull destination's deliveries to a local server, without a tunnel
    Listen(ListenArgs),
    /// Check a captured request's signature and freshness with the relay's rules
    Verify(VerifyArgs),
    /// Check the configuration as the build does, and print its sources as a tree
    #[command(subcommand)]
    Config(ConfigCommand),
    /// Sign a test webhook as a source's provider would, and send it
    Send(SendArgs),
    /// Mint a token from ADMIN_JWT_SECRET (or a pull destination's secret) on standard input
    Token(TokenArgs),
    /// Print a shell completion script
    Completion(CompletionArgs),
}

#[derive(Args, Debug)]
pub struct LoginArgs {
    /// Mint the token here from ADMIN_JWT_SECRET read on standard input, instead of reading a token
    #[arg(long)]
    pub mint: bool,
    /// With --mint: the operator's name, recorded by the audit as the actor
    #[arg(long, value_name = "NAME", requires = "mint")]
    pub sub: Option<String>,
    /// With --mint: how long the token lives (1m to 24h)
    #[arg(
        long,
        value_name = "DURATION",
        default_value = "12h",
        requires = "mint"
    )]
    pub ttl: String,
}

/// The dead-letter filters of `dlq list` and `replay`.
#[derive(Args, Debug, Clone, Default)]
pub struct EntryFilter {
    /// pending, replayed, poisoned, archived, discarded (dlq list: also evicted)
    #[arg(long)]
    pub status: Option<String>,
    /// A source name
    #[arg(long)]
    pub source: Option<String>,
    /// A destination name
    #[arg(long)]
    pub destination: Option<String>,
    /// A stable error code, e.g. UPSTREAM_5XX
    #[arg(long)]
    pub code: Option<String>,
    /// transient, poison or unknown
    #[arg(long)]
    pub class: Option<String>,
    /// An error signature (sig_…), as `dlq groups` shows
    #[arg(long)]
    pub signature: Option<String>,
    /// Dead-lettered at or after: RFC 3339, unix ms, or an age (90s, 15m, 2h, 3d)
    #[arg(long, value_name = "TIME")]
    pub since: Option<String>,
    /// Dead-lettered at or before: RFC 3339, unix ms, or an age
    #[arg(long, value_name = "TIME")]
    pub until: Option<String>,
}

/// One page, or all of them.
#[derive(Args, Debug, Clone, Default)]
pub struct Paging {
    /// Items per page (1 to 200)
    #[arg(long)]
    pub limit: Option<u32>,
    /// Continue from a page's next_cursor
    #[arg(long)]
    pub cursor: Option<String>,
    /// Every page: with --json, one array of every item
    #[arg(long, conflicts_with = "cursor")]
    pub all: bool,
}

#[derive(Subcommand, Debug)]
pub enum DlqCommand {
    /// Dead letters, newest first
    List {
        #[command(flatten)]
        filter: EntryFilter,
        #[command(flatten)]
        paging: Paging,
    },
    /// One entry's whole envelope
    Show { id: String },
    /// The incidents: entries grouped by error signature, largest first
    Groups {
        /// pending (default), replayed, poisoned, archived, discarded
        #[arg(long)]
        status: Option<String>,
        /// A source name
        #[arg(long)]
        source: Option<String>,
        /// A destination name
        #[arg(long)]
        destination: Option<String>,
        /// Dead-lettered at or after: RFC 3339, unix ms, or an age (90s, 15m, 2h, 3d)
        #[arg(long, value_name = "TIME")]
        since: Option<String>,
        /// Dead-lettered at or before: RFC 3339, unix ms, or an age
        #[arg(long, value_name = "TIME")]
        until: Option<String>,
    },
    /// Replay one entry to its destination
    Replay(Decision),
    /// Keep one entry as history
    Archive(Decision),
    /// Make an archived entry pending again
    Unarchive(Decision),
    /// Discard one entry: terminal, its stored payload erased
    Discard(Decision),
    /// Bring an evicted or swept entry back from the archive
    Restore(Decision),
}

/// One decision about one entry.
#[derive(Args, Debug)]
pub struct Decision {
    /// The entry's id (dlq_…)
    pub id: String,
    /// Why, for the audit (at least 5 characters)
    #[arg(long)]
    pub reason: String,
}

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Approve {
    Manual,
    Auto,
}

#[derive(Args, Debug)]
pub struct ReplayArgs {
    /// Why, for the audit (at least 5 characters)
    #[arg(long)]
    pub reason: String,
    #[command(flatten)]
    pub filter: EntryFilter,
    /// Print what would be replayed (by signature, by source, the canary) and change nothing
    #[arg(long)]
    pub dry_run: bool,
    /// Replay this many entries first (one per error signature), and stop if any fails (0: none)
    #[arg(long, value_name = "N")]
    pub canary: Option<u32>,
    /// Replays started per second (0.1 to 100)
    #[arg(long, value_name = "PER_S")]
    pub rate: Option<f64>,
    /// After a passed canary, wait for `jobs approve` (manual) or go on (auto)
    #[arg(long, value_enum)]
    pub approve: Option<Approve>,
    /// Follow the job to its end (exit 1 if it aborts)
    #[arg(long, conflicts_with = "dry_run")]
    pub watch: bool,
}

#[derive(Subcommand, Debug)]
pub enum JobsCommand {
    /// Jobs, newest first
    List {
        #[command(flatten)]
        paging: Paging,
    },
    /// One job: status, counts, canary
    Show { id: String },
    /// Follow a job to its end (exit 1 if it aborts)
    Watch { id: String },
    /// Let a job whose canary passed run
    Approve { id: String },
    /// Pause a job
    Pause { id: String },
    /// Resume a paused job
    Resume { id: String },
    /// Cancel a job
    Cancel { id: String },
}

#[derive(Subcommand, Debug)]
pub enum EventsCommand {
    /// Ingested events, newest first
    List {
        /// A source name
        #[arg(long)]
        source: Option<String>,
        /// Ingested at or after: RFC 3339, unix ms, or an age (90s, 15m, 2h, 3d)
        #[arg(long, value_name = "TIME")]
        since: Option<String>,
        /// none, filtered, pending, delivered, failed, parked
        #[arg(long)]
        status: Option<String>,
        /// An idempotency key (source:delivery id)
        #[arg(long)]
        key: Option<String>,
        #[command(flatten)]
        paging: Paging,
    },
    /// One event's story as a timeline: ingest, deliveries, attempts, parks, dead letters, decisions
    Show {
        /// An event id (evt_…) or an idempotency key (source:delivery id)
        event: String,
    },
}

#[derive(Args, Debug)]
pub struct TailArgs {
    /// Only this source
    #[arg(long)]
    pub source: Option<String>,
    /// Only this destination
    #[arg(long)]
    pub destination: Option<String>,
    /// Seconds between polls
    #[arg(long, default_value_t = 1.0, value_name = "SECONDS")]
    pub interval: f64,
}

#[derive(Args, Debug)]
pub struct ListenArgs {
    /// Where to forward: a port (http://127.0.0.1:<port>) or a URL
    #[arg(value_name = "PORT|URL")]
    pub target: String,
    /// The pull destination whose deliveries to forward
    #[arg(long)]
    pub destination: String,
    /// The path to POST to on the target (replaces the URL's)
    #[arg(long, value_name = "PATH")]
    pub path: Option<String>,
    /// Deliveries forwarded at once
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub concurrency: u32,
}

/// The configuration `verify`, `config check` and `send` read.
#[derive(Args, Debug, Clone)]
pub struct ConfigFiles {
    /// The relay's wrangler.toml (dlq/wrangler.toml beside it)
    #[arg(
        short = 'c',
        long = "config",
        default_value = "wrangler.toml",
        value_name = "FILE"
    )]
    pub config: PathBuf,
    /// An [env.<name>] of the configs
    #[arg(long, value_name = "NAME")]
    pub env: Option<String>,
}

#[derive(Args, Debug)]
pub struct VerifyArgs {
    /// The source whose scheme and secret check the request
    #[arg(long)]
    pub source: String,
    #[command(flatten)]
    pub files: ConfigFiles,
    /// Judge freshness as of this time: RFC 3339, unix ms, or an age [default: now]
    #[arg(long, value_name = "TIME")]
    pub at: Option<String>,
    /// The captured request: raw HTTP/1.1 (request line, headers, a blank line, the body), CRLF or LF
    pub request: PathBuf,
}

#[derive(Subcommand, Debug)]
pub enum ConfigCommand {
    /// Run the build's checks, and print each source, its scheme, its routes and their destinations
    Check {
        #[command(flatten)]
        files: ConfigFiles,
    },
}

#[derive(Args, Debug)]
pub struct SendArgs {
    /// The source to send to
    pub source: String,
    /// The body, as JSON text (a form with --form)
    #[arg(long, conflicts_with = "file")]
    pub body: Option<String>,
    /// Read the body from this file, byte-exact
    #[arg(long, value_name = "FILE")]
    pub file: Option<PathBuf>,
    /// Send the body as application/x-www-form-urlencoded
    #[arg(long)]
    pub form: bool,
    #[command(flatten)]
    pub files: ConfigFiles,
}

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Admin,
    Pull,
}

#[derive(Args, Debug)]
pub struct TokenArgs {
    /// Who the token is for (the audit records it as the actor)
    #[arg(long, value_name = "NAME")]
    pub sub: String,
    /// How long it lives: admin 1m to 24h, pull up to 365d
    #[arg(long, default_value = "12h", value_name = "DURATION")]
    pub ttl: String,
    #[arg(long, value_enum, default_value = "admin")]
    pub role: Role,
    /// The pull destination a pull token may pull
    #[arg(long, value_name = "NAME", required_if_eq("role", "pull"))]
    pub destination: Option<String>,
}

#[derive(Args, Debug)]
pub struct CompletionArgs {
    #[arg(value_enum)]
    pub shell: Shell,
}

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shell {
    Bash,
    Zsh,
    Fish,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn a_pull_token_needs_its_destination_and_watch_excludes_dry_run() {
        let parse = |args: &[&str]| Cli::try_parse_from(args.iter().copied());
        assert!(parse(&["hookrelay", "token", "--sub", "a", "--role", "pull"]).is_err());
        assert!(parse(&[
            "hookrelay",
            "token",
            "--sub",
            "a",
            "--role",
            "pull",
            "--destination",
            "d"
        ])
        .is_ok());
        assert!(parse(&[
            "hookrelay",
            "replay",
            "--reason",
            "fixed it",
            "--dry-run",
            "--watch"
        ])
        .is_err());
        assert!(parse(&["hookrelay", "dlq", "list", "--since", "2h", "--json"]).is_ok());
        assert!(parse(&["hookrelay", "--token", "x", "status"]).is_err());
    }
}
