//! `hookrelay completion bash|zsh|fish`: the shell's completion script,
//! generated from the command line's own definition (clap_complete).

use crate::args::{Cli, CompletionArgs, Shell};
use crate::failure::{Done, Outcome};
use clap::CommandFactory;

pub fn run(a: &CompletionArgs) -> Outcome {
    let shell = match a.shell {
        Shell::Bash => clap_complete::Shell::Bash,
        Shell::Zsh => clap_complete::Shell::Zsh,
        Shell::Fish => clap_complete::Shell::Fish,
    };
    clap_complete::generate(
        shell,
        &mut Cli::command(),
        "hookrelay",
        &mut std::io::stdout(),
    );
    Ok(Done::Ok)
}
