//! Build-time checks of the committed deployment files, so a broken
//! configuration fails `cargo build` instead of production. The checks
//! themselves are `hookrelay_core::config::build_check` (shared with
//! `hookrelay config check`): both configs and each `[env.*]`, the user's
//! `[vars]` by their schema, the demo's (`.dev.vars.example` over
//! `[vars]`) by the demo's rules, queue names, retry budgets, storage,
//! bindings, the DLQ worker's privacy, the signature limit, and the
//! numbering of `migrations/`. This file only reads the files.

use hookrelay_core::config::build_check::{
    check_deployment, check_migrations, parse_dev_vars, ConfigFile, Deployment,
};
use serde_json::Value;
use std::fs;

fn main() {
    for path in [
        "wrangler.toml",
        "dlq/wrangler.toml",
        ".dev.vars.example",
        "migrations",
    ] {
        println!("cargo:rerun-if-changed={path}");
    }
    if let Err(problem) = check() {
        panic!("\n\nhookrelay build check failed: {problem}\n\n");
    }
}

fn check() -> Result<(), String> {
    let relay = read_toml("wrangler.toml")?;
    let dlq = read_toml("dlq/wrangler.toml")?;
    let demo = fs::read_to_string(".dev.vars.example")
        .map_err(|e| format!("cannot read .dev.vars.example: {e}"))?;
    let demo = parse_dev_vars(&demo);
    check_deployment(&Deployment {
        relay: ConfigFile {
            label: "wrangler.toml",
            table: &relay,
        },
        dlq: ConfigFile {
            label: "dlq/wrangler.toml",
            table: &dlq,
        },
        demo_vars: Some(&demo),
    })?;
    let migrations: Vec<String> = fs::read_dir("migrations")
        .map_err(|e| format!("cannot read migrations/: {e}"))?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    check_migrations(&migrations)
}

/// A TOML file as JSON, the form the checks read.
fn read_toml(path: &str) -> Result<Value, String> {
    let text = fs::read_to_string(path).map_err(|e| format!("cannot read {path}: {e}"))?;
    let table: toml::Value =
        toml::from_str(&text).map_err(|e| format!("{path} is not valid TOML: {e}"))?;
    serde_json::to_value(table).map_err(|e| format!("{path}: {e}"))
}
