//! Build-time checks of the committed deployment files, so a broken
//! configuration fails `cargo build` instead of production:
//!
//! - `wrangler.toml` `[vars]` parse with the same code the worker runs
//!   (`hookrelay_core::config`), with the secrets from `.dev.vars.example`,
//!   so each declared source is checked against its scheme's rules;
//! - the `webhooks` consumer keeps the contract's retry budget and DLQ;
//! - both workers name the same D1 database, and declare the settings
//!   both read (`hookrelay_core::config::SHARED_KEYS`) alike or not at all;
//! - `migrations/` is numbered `0001_name.sql`, `0002_…`, with no gaps (beside its README.md).

use hookrelay_core::config::{check_shared, Declared, RelayConfig};
use serde_json::Value;
use std::collections::BTreeMap;
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
    check_vars(&relay)?;
    check_consumer(&relay)?;
    check_same_database(&relay, &dlq)?;
    check_shared_vars(&relay, &dlq)?;
    check_migrations()
}

fn read_toml(path: &str) -> Result<toml::Value, String> {
    let text = fs::read_to_string(path).map_err(|e| format!("cannot read {path}: {e}"))?;
    toml::from_str(&text).map_err(|e| format!("{path} is not valid TOML: {e}"))
}

fn check_vars(relay: &toml::Value) -> Result<(), String> {
    relay
        .get("vars")
        .ok_or("wrangler.toml has no [vars]; the demo SOURCES must be declared there")?;
    let mut env = vars_map(relay)?;
    env.extend(dev_vars_example()?);
    // The same load the worker runs: each declared source is checked
    // against its scheme's rules (a preset's name, or every field of a
    // recipe), and its secrets against the key form the scheme needs.
    RelayConfig::load(&env)
        .map_err(|e| format!("wrangler.toml [vars] with .dev.vars.example: {e}"))?;
    Ok(())
}

fn dev_vars_example() -> Result<BTreeMap<String, Value>, String> {
    let text = fs::read_to_string(".dev.vars.example")
        .map_err(|e| format!("cannot read .dev.vars.example: {e}"))?;
    Ok(text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| {
            (
                k.trim().to_string(),
                Value::String(v.trim().trim_matches('"').to_string()),
            )
        })
        .collect())
}

fn check_consumer(relay: &toml::Value) -> Result<(), String> {
    let consumers = relay
        .get("queues")
        .and_then(|q| q.get("consumers"))
        .and_then(toml::Value::as_array)
        .ok_or("wrangler.toml has no [[queues.consumers]]")?;
    let webhooks = consumers
        .iter()
        .find(|c| c.get("queue").and_then(toml::Value::as_str) == Some("webhooks"))
        .ok_or("wrangler.toml has no consumer for queue `webhooks`")?;
    let int = |k: &str| webhooks.get(k).and_then(toml::Value::as_integer);
    if int("max_retries") != Some(5) {
        return Err("the `webhooks` consumer must set max_retries = 5".into());
    }
    if webhooks
        .get("dead_letter_queue")
        .and_then(toml::Value::as_str)
        != Some("webhooks-dlq")
    {
        return Err("the `webhooks` consumer must set dead_letter_queue = \"webhooks-dlq\"".into());
    }
    if int("max_batch_size").is_none() || int("max_batch_timeout").is_none() {
        return Err(
            "the `webhooks` consumer must set max_batch_size and max_batch_timeout explicitly"
                .into(),
        );
    }
    Ok(())
}

fn check_same_database(relay: &toml::Value, dlq: &toml::Value) -> Result<(), String> {
    let id = |t: &toml::Value| {
        t.get("d1_databases")
            .and_then(toml::Value::as_array)
            .and_then(|dbs| {
                dbs.iter()
                    .find(|d| d.get("binding").and_then(toml::Value::as_str) == Some("DB"))
            })
            .and_then(|d| d.get("database_id"))
            .and_then(toml::Value::as_str)
            .map(str::to_string)
    };
    match (id(relay), id(dlq)) {
        (Some(a), Some(b)) if a == b => Ok(()),
        (a, b) => Err(format!(
            "both workers must bind DB to the same D1 database (wrangler.toml: {a:?}, dlq/wrangler.toml: {b:?})"
        )),
    }
}

/// Replays in the DLQ worker deliver like the consumer does, so the
/// settings both workers read must not drift apart.
/// One copy of the delivery configuration: only the relay holds it, and
/// the two workers bind each other by name (the relay forwards the admin
/// API, the DLQ worker hands replays back).
fn check_shared_vars(relay: &toml::Value, dlq: &toml::Value) -> Result<(), String> {
    for key in [
        "SOURCES",
        "RETRY_DELAYS_S",
        "DELIVERY_TIMEOUT_MS",
        "BREAKER_FAILURE_THRESHOLD",
        "BREAKER_SUCCESS_THRESHOLD",
        "BREAKER_COOLDOWN_S",
        "BREAKER_OPEN_ACTION",
        "DRAIN_RATE_PER_S",
        "PARK_MAX_AGE",
    ] {
        if dlq.get("vars").and_then(|v| v.get(key)).is_some() {
            return Err(format!(
                "dlq/wrangler.toml [vars] declares {key}, but only the relay (wrangler.toml) holds the delivery configuration; replays run in the relay. Remove it"
            ));
        }
    }
    check_lifecycle_vars(relay, dlq)?;
    let vars = |cfg: &toml::Value| cfg.get("vars").and_then(|v| v.as_table()).cloned();
    if let Some(key) = vars(dlq)
        .unwrap_or_default()
        .keys()
        .find(|k| k.starts_with("ALERT_"))
    {
        return Err(format!(
            "dlq/wrangler.toml [vars] declares {key}, but alarms are the relay's (its watchdog sends the alerts); set it on the relay (wrangler.toml, or `wrangler secret put` for ALERT_WEBHOOK_URL)"
        ));
    }
    let binds = |cfg: &toml::Value, binding: &str| -> Option<String> {
        cfg.get("services")?.as_array()?.iter().find_map(|s| {
            (s.get("binding")?.as_str()? == binding)
                .then(|| s.get("service")?.as_str().map(String::from))?
        })
    };
    let name = |cfg: &toml::Value| cfg.get("name").and_then(|n| n.as_str()).map(String::from);
    if binds(relay, "DLQ") != name(dlq) || binds(dlq, "RELAY") != name(relay) {
        return Err("wrangler.toml must bind DLQ to the DLQ worker's name, and dlq/wrangler.toml must bind RELAY to the relay's name".into());
    }
    Ok(())
}

/// The settings both workers read (`hookrelay_core::config::SHARED_KEYS`:
/// the lifecycle's ages and size, the capacity) must be declared alike in
/// both files or in neither: each worker reads only its own `[vars]`, so a
/// value in one file would leave the other on its default. The alert
/// settings are the relay's alone (it runs the watchdog and holds the
/// receiver's URL).
fn check_lifecycle_vars(relay: &toml::Value, dlq: &toml::Value) -> Result<(), String> {
    let (relay_vars, dlq_vars) = (vars_map(relay)?, vars_map(dlq)?);
    check_shared(
        Declared {
            file: "wrangler.toml [vars]",
            vars: &relay_vars,
        },
        Declared {
            file: "dlq/wrangler.toml [vars]",
            vars: &dlq_vars,
        },
    )
    .map_err(|e| e.to_string())?;
    let dlq_vars = dlq.get("vars").and_then(|v| v.as_table());
    if let Some(key) = dlq_vars.and_then(|t| t.keys().find(|k| k.starts_with("ALERT_"))) {
        return Err(format!(
            "dlq/wrangler.toml [vars] declares {key}, but the alarms run in the relay (wrangler.toml); move it there"
        ));
    }
    Ok(())
}

/// A config's `[vars]` as the workers' parsers read them.
fn vars_map(cfg: &toml::Value) -> Result<BTreeMap<String, Value>, String> {
    let Some(vars) = cfg.get("vars") else {
        return Ok(BTreeMap::new());
    };
    Ok(serde_json::to_value(vars)
        .map_err(|e| e.to_string())?
        .as_object()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .collect())
}

fn check_migrations() -> Result<(), String> {
    let mut names: Vec<String> = fs::read_dir("migrations")
        .map_err(|e| format!("cannot read migrations/: {e}"))?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        // The folder's README (the expand-then-contract rule) is no migration; wrangler reads only *.sql.
        .filter(|name| name != "README.md")
        .collect();
    names.sort();
    if names.is_empty() {
        return Err("migrations/ is empty".into());
    }
    for (i, name) in names.iter().enumerate() {
        let expected = format!("{:04}_", i + 1);
        let well_formed = name.ends_with(".sql")
            && name.len() > 9
            && name[5..name.len() - 4]
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
        if !name.starts_with(&expected) || !well_formed {
            return Err(format!(
                "migrations/{name}: expected {expected}<lower_snake_name>.sql (files must be numbered 0001, 0002, … without gaps)"
            ));
        }
    }
    Ok(())
}
