//! `hookrelay`: the operator's command line. It reads and steers a relay
//! through its public HTTP surface only (the admin API, `/webhooks/…`,
//! `/healthz`), so it works alike against `npm start` and a deployment and
//! needs no Cloudflare credentials; and it checks configurations and
//! captured requests locally with the core's own rules. DESIGN §8 is its
//! contract; `docs/cli.md` shows every command.
//!
//! Exit status: 0 done, 1 the operation failed or found a problem, 2 a
//! usage error. Every error says what to do next.

mod args;
mod clock;
mod commands;
mod dev_token;
mod failure;
mod http;
mod local;
mod mint;
mod profiles;
mod show;
mod target;
mod time_input;
mod token;

use clap::Parser;

fn main() {
    std::process::exit(run());
}

fn run() -> i32 {
    let cli = match args::Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // Help and version print to stdout and exit 0; a usage error
            // prints its message and exits 2.
            let _ = e.print();
            return e.exit_code();
        }
    };
    match commands::run(cli) {
        Ok(done) => done.exit_code(),
        Err(failure) => {
            eprintln!("{failure}");
            failure.exit_code()
        }
    }
}
