//! The checks of the deployment files that `build.rs` runs at every build
//! and `hookrelay config check` runs on demand, so a broken configuration
//! fails before production, with the same words either way. Each check
//! runs for the top level and for each `[env.*]` of both configs (wrangler
//! inherits no bindings or vars into an environment):
//!
//! - the user's configuration, the relay's `[vars]`, by its schema
//!   (`DESTINATIONS` and each source's routes, filters included, with the
//!   validator the startup runs): its `SOURCES` may be empty, and its
//!   secrets are production's (`wrangler secret put`), so none is needed;
//! - the demo's, `[vars]` overlaid with `.dev.vars.example` (as `wrangler
//!   dev` runs it), by the demo's rules: loaded whole, each demo source
//!   with its development secret;
//! - queue names agree with the queue vars (`QUEUE_*`, [`super::queues`]):
//!   each worker's consumers, the producers' bindings and the
//!   `dead_letter_queue`; the consumers that call out keep the contract's
//!   retry budget;
//! - both workers name the same D1 database and R2 bucket, bind each other
//!   by name, and declare the settings both read ([`super::SHARED_KEYS`])
//!   alike or not at all; each environment declares every var the top
//!   level does;
//! - a destination's queue or service binding is declared in the same
//!   environment of the relay's config ([`check_bindings`]), is none of the
//!   relay's own, and reaches no queue or Worker the relay uses itself
//!   under another binding name, compared by queue and service name
//!   ([`check_not_own_targets`]);
//! - the DLQ worker is off workers.dev and preview URLs; the signature rate
//!   limit's period is `crate::receive::signature_limit::PERIOD_S`;
//! - `migrations/` is numbered `0001_name.sql`, `0002_…`, with no gaps.
//!
//! In scope: the rules, over the files as JSON values (TOML converts to
//! JSON losslessly for what is checked here). Out of scope: reading the
//! files, which the caller does and names (`label`).

use super::{check_shared, Declared, RelayConfig};
use crate::deliver::destinations::{
    check_bindings, check_not_own_targets, load_destinations, BindingKind, Destination, OwnTargets,
};
use crate::deliver::settings::DEFAULT_DELIVERY_TIMEOUT_MS;
use crate::receive::signature_limit;
use crate::receive::sources::parse_sources;
use crate::support::bindings::RELAY_BINDINGS;
use crate::support::env::ConfigError;
use crate::support::queue_names::{OriginQueues, QueueNames, QueueVar, DLQ_QUEUES, RELAY_QUEUES};
use serde_json::Value;
use std::collections::BTreeMap;

/// One deployment file, parsed: what it is called in messages, and its
/// contents as JSON.
#[derive(Clone, Copy)]
pub struct ConfigFile<'a> {
    /// How messages name it: `wrangler.toml`, `dlq/wrangler.toml`.
    pub label: &'a str,
    /// The whole file.
    pub table: &'a Value,
}

/// What the build checks together.
pub struct Deployment<'a> {
    /// The relay's config.
    pub relay: ConfigFile<'a>,
    /// The DLQ worker's config.
    pub dlq: ConfigFile<'a>,
    /// The demo's vars (`.dev.vars.example`), when there is a demo.
    pub demo_vars: Option<&'a BTreeMap<String, Value>>,
}

/// One environment of one config: the top level, or an `[env.<name>]`.
struct Env<'a> {
    file: &'a str,
    /// `None` for the top level.
    env: Option<&'a str>,
    table: &'a Value,
}

impl Env<'_> {
    fn at(&self) -> String {
        match self.env {
            Some(e) => format!("{} [env.{e}]", self.file),
            None => self.file.to_string(),
        }
    }
    fn get(&self, key: &str) -> Option<&Value> {
        self.table.get(key)
    }
    fn vars(&self) -> BTreeMap<String, Value> {
        vars_map(self.table)
    }
}

/// The top level and each `[env.*]` of a config.
fn envs<'a>(file: ConfigFile<'a>) -> Vec<Env<'a>> {
    let mut out = vec![Env {
        file: file.label,
        env: None,
        table: file.table,
    }];
    if let Some(named) = file.table.get("env").and_then(Value::as_object) {
        for (name, table) in named {
            out.push(Env {
                file: file.label,
                env: Some(name),
                table,
            });
        }
    }
    out
}

/// Every check of both configs and each of their environments, the demo
/// included when given; the first problem found, worded for the operator.
pub fn check_deployment(d: &Deployment<'_>) -> Result<(), String> {
    let (relay_envs, dlq_envs) = (envs(d.relay), envs(d.dlq));
    let names = |es: &[Env]| {
        es.iter()
            .map(|e| e.env.map(String::from))
            .collect::<Vec<_>>()
    };
    if names(&relay_envs) != names(&dlq_envs) {
        return Err(format!(
            "{} declares the environments {:?} but {} {:?}; both workers deploy together, so declare the same [env.*] in both",
            d.relay.label,
            names(&relay_envs),
            d.dlq.label,
            names(&dlq_envs)
        ));
    }
    if let Some(demo) = d.demo_vars {
        check_demo(d.relay.table, demo)?;
    }
    for (r, q) in relay_envs.iter().zip(&dlq_envs) {
        check_user_vars(r, q)?;
        check_same_vars_everywhere(r, &relay_envs[0])?;
        check_same_vars_everywhere(q, &dlq_envs[0])?;
        check_queues(r, q)?;
        check_same_storage(r, q)?;
        check_shared_vars(r, q)?;
        check_dlq_private(q)?;
        check_rate_limit(r)?;
    }
    Ok(())
}

/// The vars of one environment of a config (`None`: the top level), as
/// the workers' parsers read them.
pub fn env_vars(table: &Value, env: Option<&str>) -> Result<BTreeMap<String, Value>, String> {
    match env {
        None => Ok(vars_map(table)),
        Some(name) => table
            .get("env")
            .and_then(|e| e.get(name))
            .map(vars_map)
            .ok_or_else(|| format!("declares no [env.{name}]; name one it declares, or leave --env out for the top level")),
    }
}

/// The user's `[vars]` by their schema: every setting the relay parses,
/// and `SOURCES` (possibly empty) field by field. The sources' and the
/// destinations' secrets are production's, never in the repository, so
/// they are not asked for (a stand-in fills each `DESTINATION_SECRET_…`).
fn check_user_vars(relay: &Env, dlq: &Env) -> Result<(), String> {
    let at = |e: ConfigError| format!("{} [vars]: {e}", relay.at());
    let mut vars = relay.vars();
    let sources = vars
        .remove("SOURCES")
        .unwrap_or(Value::Object(Default::default()));
    parse_sources(&sources).map_err(at)?;
    vars.insert("SOURCES".into(), Value::Object(Default::default()));
    let destinations = stand_in_destination_secrets(&mut vars).map_err(at)?;
    check_bindings(&destinations, |kind, name| {
        declares_binding(relay.table, kind, name)
    })
    .map_err(at)?;
    let own = own_targets(relay, dlq)?;
    check_not_own_targets(
        &destinations,
        |kind, name| bound_to(relay.table, kind, name),
        &own,
    )
    .map_err(at)?;
    RelayConfig::load(&vars).map_err(at)?;
    Ok(())
}

/// The declared destinations; each `DESTINATION_SECRET_…` their `auth`
/// needs and `vars` lacks gets a stand-in: those secrets are production's
/// (`wrangler secret put`), never in the repository.
pub fn stand_in_destination_secrets(
    vars: &mut BTreeMap<String, Value>,
) -> Result<Vec<Destination>, ConfigError> {
    let destinations = load_destinations(&*vars, DEFAULT_DELIVERY_TIMEOUT_MS as u32)?;
    for d in destinations.iter().filter(|d| d.auth.is_some()) {
        vars.entry(d.auth_secret_name())
            .or_insert_with(|| Value::String("build-check:stand-in".into()));
    }
    Ok(destinations)
}

/// Whether a relay config (one environment of it) declares binding `name`
/// of `kind`: a `[[services]]` or a `[[queues.producers]]` entry.
pub fn declares_binding(relay: &Value, kind: BindingKind, name: &str) -> bool {
    binding_entries(relay, kind)
        .iter()
        .any(|e| e.get("binding").and_then(Value::as_str) == Some(name))
}

/// The binding entries of `kind` in a relay config (one environment).
fn binding_entries(relay: &Value, kind: BindingKind) -> Vec<&Value> {
    let table = match kind {
        BindingKind::Service => relay.get("services"),
        BindingKind::Queue => relay.get("queues").and_then(|q| q.get("producers")),
    };
    table
        .and_then(Value::as_array)
        .map(|a| a.iter().collect())
        .unwrap_or_default()
}

/// The queue or Worker the relay's binding `name` of `kind` points at.
fn bound_to(relay: &Value, kind: BindingKind, name: &str) -> Option<String> {
    let field = match kind {
        BindingKind::Service => "service",
        BindingKind::Queue => "queue",
    };
    binding_entries(relay, kind)
        .into_iter()
        .find(|e| e.get("binding").and_then(Value::as_str) == Some(name))
        .and_then(|e| e.get(field).and_then(Value::as_str))
        .map(String::from)
}

/// The queues and Workers the relay uses itself: its own bindings'
/// targets ([`RELAY_BINDINGS`]), the queues both workers consume and
/// dead-letter to (their `QUEUE_*` names), and the relay's own name.
fn own_targets(relay: &Env, dlq: &Env) -> Result<OwnTargets, String> {
    let mut own = OwnTargets::default();
    for (kind, list) in [
        (BindingKind::Queue, &mut own.queues),
        (BindingKind::Service, &mut own.services),
    ] {
        for binding in RELAY_BINDINGS {
            list.extend(bound_to(relay.table, kind, binding));
        }
    }
    own.queues.extend(queue_names(relay, RELAY_QUEUES)?);
    own.queues.extend(queue_names(dlq, DLQ_QUEUES)?);
    for c in queue_tables(relay, "consumers") {
        own.queues.extend(
            c.get("dead_letter_queue")
                .and_then(Value::as_str)
                .map(String::from),
        );
    }
    own.services
        .extend(relay.get("name").and_then(Value::as_str).map(String::from));
    Ok(own)
}

/// The demo, as `npm start` runs it: the top-level `[vars]` with
/// `.dev.vars.example` over them (wrangler dev's precedence), loaded whole,
/// so each demo source has its development secret and declares one.
fn check_demo(relay: &Value, demo: &BTreeMap<String, Value>) -> Result<(), String> {
    let at = |e: ConfigError| {
        format!("the demo (wrangler.toml [vars] with .dev.vars.example over them): {e}")
    };
    let mut env = vars_map(relay);
    env.extend(demo.clone());
    stand_in_destination_secrets(&mut env).map_err(at)?;
    let config = RelayConfig::load(&env).map_err(at)?;
    if config.sources.is_empty() {
        return Err(".dev.vars.example declares no demo SOURCES; `npm start`, `npm run demo` and the tests need them".into());
    }
    Ok(())
}

/// A dotenv file's variables (`KEY="value"` or `KEY='value'` lines, `#`
/// comments), as wrangler reads `.dev.vars`.
pub fn parse_dev_vars(text: &str) -> BTreeMap<String, Value> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| {
            (
                k.trim().to_string(),
                Value::String(unquote(v.trim()).to_string()),
            )
        })
        .collect()
}

/// A dotenv value without a matched pair of quotes around it.
fn unquote(v: &str) -> &str {
    for q in ['"', '\'', '`'] {
        if v.len() >= 2 && v.starts_with(q) && v.ends_with(q) {
            return &v[1..v.len() - 1];
        }
    }
    v
}

/// The names of `table`'s queues in `e`: its vars, or their defaults.
fn queue_names<C: Copy>(e: &Env, table: &[QueueVar<C>]) -> Result<Vec<String>, String> {
    let vars = e.vars();
    QueueNames::load(&vars, table).map_err(|err| format!("{} [vars]: {err}", e.at()))?;
    Ok(table
        .iter()
        .map(|row| match vars.get(row.var) {
            Some(Value::String(s)) => s.clone(),
            _ => row.default.to_string(),
        })
        .collect())
}

/// Every queue name in both configs agrees with the queue vars: the
/// consumers are exactly the queues the vars name, the producers send to
/// them, and the relay's dead letters go to the DLQ worker's queue.
fn check_queues(relay: &Env, dlq: &Env) -> Result<(), String> {
    let r = queue_names(relay, RELAY_QUEUES)?;
    let d = queue_names(dlq, DLQ_QUEUES)?;
    let (webhooks, control, deliveries) = (&r[0], &r[1], &r[2]);
    let (dead, jobs) = (&d[0], &d[1]);
    expect_consumers(relay, &r)?;
    expect_consumers(dlq, &d)?;
    let dead_var = format!("QUEUE_DLQ ({})", dlq.file);
    expect_producer(relay, "WEBHOOKS", webhooks, "QUEUE_WEBHOOKS")?;
    expect_producer(relay, "CONTROL", control, "QUEUE_CONTROL")?;
    expect_producer(relay, "DELIVERIES", deliveries, "QUEUE_DELIVERIES")?;
    expect_producer(relay, "WEBHOOKS_DLQ", dead, &dead_var)?;
    expect_producer(dlq, "JOBS", jobs, "QUEUE_JOBS")?;
    // The DLQ worker names the relay's queues in its envelopes.
    let named =
        OriginQueues::load(&dlq.vars()).map_err(|err| format!("{} [vars]: {err}", dlq.at()))?;
    for (what, theirs, ours) in [
        ("QUEUE_WEBHOOKS", &named.webhooks, webhooks),
        ("QUEUE_DELIVERIES", &named.deliveries, deliveries),
    ] {
        if theirs != ours {
            return Err(format!(
                "{} [vars]: {what} is {theirs:?} but the relay consumes {ours:?} ({}); set the same name, the DLQ worker writes it into each dead letter",
                dlq.at(),
                relay.at()
            ));
        }
    }
    // Both consumers that call out keep the contract's retry budget and
    // dead-letter to the DLQ worker's queue (DESIGN §3).
    for queue in [webhooks, deliveries] {
        expect_retry_contract(relay, dlq, queue, dead)?;
    }
    Ok(())
}

/// The consumer of `queue` sets `max_retries = 5`, dead-letters to `dead`
/// and sets its batch size and timeout explicitly.
fn expect_retry_contract(relay: &Env, dlq: &Env, queue: &str, dead: &str) -> Result<(), String> {
    let main = consumer(relay, queue).expect("expect_consumers checked it");
    let int = |k: &str| main.get(k).and_then(Value::as_i64);
    let at = relay.at();
    if int("max_retries") != Some(5) {
        return Err(format!(
            "{at}: the consumer of {queue:?} must set max_retries = 5"
        ));
    }
    if main.get("dead_letter_queue").and_then(Value::as_str) != Some(dead) {
        return Err(format!(
            "{at}: the consumer of {queue:?} must set dead_letter_queue = {dead:?}, the queue the DLQ worker consumes (QUEUE_DLQ in {})",
            dlq.at()
        ));
    }
    if int("max_batch_size").is_none() || int("max_batch_timeout").is_none() {
        return Err(format!(
            "{at}: the consumer of {queue:?} must set max_batch_size and max_batch_timeout explicitly"
        ));
    }
    Ok(())
}

fn queue_tables<'a>(e: &'a Env, kind: &str) -> Vec<&'a Value> {
    e.get("queues")
        .and_then(|q| q.get(kind))
        .and_then(Value::as_array)
        .map(|a| a.iter().collect())
        .unwrap_or_default()
}

fn consumer<'a>(e: &'a Env, queue: &str) -> Option<&'a Value> {
    queue_tables(e, "consumers")
        .into_iter()
        .find(|c| c.get("queue").and_then(Value::as_str) == Some(queue))
}

/// The consumers are exactly the queues the vars name.
fn expect_consumers(e: &Env, names: &[String]) -> Result<(), String> {
    let mut declared: Vec<String> = queue_tables(e, "consumers")
        .iter()
        .filter_map(|c| c.get("queue").and_then(Value::as_str).map(String::from))
        .collect();
    let mut wanted = names.to_vec();
    declared.sort();
    wanted.sort();
    if declared != wanted {
        return Err(format!(
            "{}: [[queues.consumers]] consume {declared:?} but the queue vars (QUEUE_*) name {wanted:?}; the worker dispatches a batch by these vars, so make them agree",
            e.at()
        ));
    }
    Ok(())
}

fn expect_producer(e: &Env, binding: &str, queue: &str, var: &str) -> Result<(), String> {
    let bound = queue_tables(e, "producers").into_iter().find_map(|p| {
        (p.get("binding")?.as_str()? == binding).then(|| p.get("queue")?.as_str())?
    });
    if bound != Some(queue) {
        return Err(format!(
            "{}: the producer {binding} must send to {queue:?} (named by {var}), not {bound:?}",
            e.at()
        ));
    }
    Ok(())
}

/// Both workers of one environment share its D1 database and R2 bucket.
fn check_same_storage(relay: &Env, dlq: &Env) -> Result<(), String> {
    for (list, binding, fields) in [
        ("d1_databases", "DB", &["database_id", "database_name"][..]),
        ("r2_buckets", "ARCHIVE", &["bucket_name"][..]),
    ] {
        let find = |e: &Env| -> Option<Value> {
            e.get(list)?
                .as_array()?
                .iter()
                .find(|d| d.get("binding").and_then(Value::as_str) == Some(binding))
                .cloned()
        };
        let (a, b) = (find(relay), find(dlq));
        for field in fields {
            let value = |t: &Option<Value>| {
                t.as_ref()
                    .and_then(|t| t.get(*field))
                    .and_then(Value::as_str)
                    .map(String::from)
            };
            match (value(&a), value(&b)) {
                (Some(x), Some(y)) if x == y => {}
                (x, y) => {
                    return Err(format!(
                        "both workers must bind {binding} to the same {list} entry ({field}: {} has {x:?}, {} has {y:?})",
                        relay.at(),
                        dlq.at()
                    ))
                }
            }
        }
    }
    Ok(())
}

/// An environment declares every var its top level does: wrangler does not
/// inherit `[vars]`, so a var left out would run on its default there.
fn check_same_vars_everywhere(e: &Env, top: &Env) -> Result<(), String> {
    if e.env.is_none() {
        return Ok(());
    }
    let (mine, top_vars) = (e.vars(), top.vars());
    if let Some(key) = top_vars.keys().find(|k| !mine.contains_key(*k)) {
        return Err(format!(
            "{} [vars] does not declare {key}, which the top level does; wrangler does not inherit vars into an environment, so repeat it",
            e.at()
        ));
    }
    Ok(())
}

/// The DLQ worker is reached only through the relay's service binding.
fn check_dlq_private(dlq: &Env) -> Result<(), String> {
    for key in ["workers_dev", "preview_urls"] {
        if dlq.get(key).and_then(Value::as_bool) != Some(false) {
            return Err(format!(
                "{} must set {key} = false: the DLQ worker serves the admin API and is reached only through the relay",
                dlq.at()
            ));
        }
    }
    Ok(())
}

/// The signature rate limit is bound, with the period the relay remembers
/// a block for.
fn check_rate_limit(relay: &Env) -> Result<(), String> {
    let limiter = relay
        .get("ratelimits")
        .and_then(Value::as_array)
        .and_then(|a| {
            a.iter()
                .find(|r| r.get("name").and_then(Value::as_str) == Some(signature_limit::BINDING))
        })
        .ok_or_else(|| {
            format!(
                "{} declares no [[ratelimits]] named {}; the relay counts failed signature checks on it",
                relay.at(),
                signature_limit::BINDING
            )
        })?;
    let simple = limiter.get("simple");
    let period = simple.and_then(|s| s.get("period")).and_then(Value::as_i64);
    let limit = simple.and_then(|s| s.get("limit")).and_then(Value::as_i64);
    if period != Some(i64::from(signature_limit::PERIOD_S)) || limit.is_none_or(|l| l < 1) {
        return Err(format!(
            "{}: [[ratelimits]] {} must set simple = {{ limit = <at least 1>, period = {} }} (the period the relay keeps an address blocked, hookrelay_core::signature_limit::PERIOD_S)",
            relay.at(),
            signature_limit::BINDING,
            signature_limit::PERIOD_S
        ));
    }
    Ok(())
}

/// The delivery settings the DLQ worker must never declare: only the relay
/// holds them, and replays run there.
const RELAY_ONLY_VARS: [&str; 12] = [
    "SOURCES",
    "DESTINATIONS",
    "RETRY_DELAYS_S",
    "DELIVERY_TIMEOUT_MS",
    "BREAKER_FAILURE_THRESHOLD",
    "BREAKER_SUCCESS_THRESHOLD",
    "BREAKER_COOLDOWN_S",
    "BREAKER_OPEN_ACTION",
    "DRAIN_RATE_PER_S",
    "PARK_MAX_AGE",
    "MESSAGE_OVERDUE",
    "FIRST_ATTEMPT_BUDGET",
];

/// One copy of the delivery configuration: only the relay holds it, and
/// the two workers bind each other by name (the relay forwards the admin
/// API, the DLQ worker hands replays back).
fn check_shared_vars(relay: &Env, dlq: &Env) -> Result<(), String> {
    let dlq_vars = dlq.vars();
    if let Some(key) = RELAY_ONLY_VARS.iter().find(|k| dlq_vars.contains_key(**k)) {
        return Err(format!(
            "{} [vars] declares {key}, but only the relay ({}) holds the delivery configuration; replays run in the relay. Remove it",
            dlq.at(),
            relay.at()
        ));
    }
    check_lifecycle_vars(relay, dlq)?;
    let binds = |cfg: &Value, binding: &str| -> Option<String> {
        cfg.get("services")?.as_array()?.iter().find_map(|s| {
            (s.get("binding")?.as_str()? == binding)
                .then(|| s.get("service")?.as_str().map(String::from))?
        })
    };
    let name = |cfg: &Value| cfg.get("name").and_then(Value::as_str).map(String::from);
    if binds(relay.table, "DLQ") != name(dlq.table)
        || binds(dlq.table, "RELAY") != name(relay.table)
    {
        return Err(format!(
            "{} must bind DLQ to the DLQ worker's name, and {} must bind RELAY to the relay's name",
            relay.at(),
            dlq.at()
        ));
    }
    Ok(())
}

/// The settings both workers read ([`super::SHARED_KEYS`]: the lifecycle's
/// ages and size, the capacity) must be declared alike in both files or in
/// neither: each worker reads only its own `[vars]`, so a value in one
/// file would leave the other on its default. The alert settings are the
/// relay's alone (it runs the watchdog and holds the receiver's URL).
fn check_lifecycle_vars(relay: &Env, dlq: &Env) -> Result<(), String> {
    let (relay_vars, dlq_vars) = (relay.vars(), dlq.vars());
    let (relay_at, dlq_at) = (
        format!("{} [vars]", relay.at()),
        format!("{} [vars]", dlq.at()),
    );
    check_shared(
        Declared {
            file: &relay_at,
            vars: &relay_vars,
        },
        Declared {
            file: &dlq_at,
            vars: &dlq_vars,
        },
    )
    .map_err(|e| format!("{} and {}: {e}", relay.at(), dlq.at()))?;
    if let Some(key) = dlq_vars.keys().find(|k| k.starts_with("ALERT_")) {
        return Err(format!(
            "{dlq_at} declares {key}, but the alarms run in the relay ({}); move it there (`wrangler secret put` for ALERT_WEBHOOK_URL)",
            relay.at()
        ));
    }
    Ok(())
}

/// A config's `[vars]` as the workers' parsers read them.
fn vars_map(cfg: &Value) -> BTreeMap<String, Value> {
    cfg.get("vars")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .collect()
}

/// The migration files' names (the folder's `README.md` left out) are
/// `0001_<lower_snake_name>.sql`, `0002_…`, numbered without gaps.
pub fn check_migrations(names: &[String]) -> Result<(), String> {
    let mut names: Vec<&String> = names.iter().filter(|n| *n != "README.md").collect();
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

#[cfg(test)]
mod tests;
