//! `hookrelay config check [-c wrangler.toml] [--env <e>]`: the build's own
//! checks of both configs (`hookrelay_core::config::build_check`, which
//! `build.rs` runs too), then the configuration as `npm start` layers it
//! (`SOURCES`, `DESTINATIONS` and their bindings, by the startup's rules),
//! printed as a tree: each source, its scheme, its routes and their
//! destinations. An error names its path (`SOURCES.acme.scheme.encoding:
//! …`); exit 1 when any check fails.

use crate::args::{ConfigFiles, Global};
use crate::failure::{Done, Failure, Outcome};
use crate::local::project::{self, read_toml, Project};
use hookrelay_core::config::build_check::{
    check_deployment, check_migrations, declares_binding, parse_dev_vars,
    stand_in_destination_secrets, ConfigFile, Deployment,
};
use hookrelay_core::config::RelayConfig;
use hookrelay_core::deliver::{check_bindings, Destination, Target};
use hookrelay_core::receive::{load_sources, SourceSpec};
use hookrelay_core::support::redact::destination_label;
use serde_json::Value;
use std::collections::btree_map::Entry;
use std::path::Path;

pub fn run(_g: &Global, files: &ConfigFiles) -> Outcome {
    let mut problems = 0;
    match build_checks(&files.config) {
        Ok(what) => println!("build checks  ok: {what}"),
        Err(e) => {
            problems += 1;
            println!("build checks  FAILED: {e}");
        }
    }
    let project = project::load(files)?;
    match effective(&project, files.env.as_deref()) {
        Ok(tree) => println!("{tree}"),
        Err(e) => {
            problems += 1;
            let var = if e.starts_with("DESTINATIONS") {
                "DESTINATIONS"
            } else {
                "SOURCES"
            };
            let from = project
                .origin
                .get(var)
                .cloned()
                .unwrap_or_else(|| project.relay_path.display().to_string());
            println!("configuration FAILED: {e}\n  next: fix it where {var} is declared ({from})");
        }
    }
    Ok(if problems == 0 {
        Done::Ok
    } else {
        Done::Problem
    })
}

/// Both configs, every environment, the demo and the migrations, as the
/// build checks them; what was checked, in words.
fn build_checks(config: &Path) -> Result<String, String> {
    let dir = config.parent().unwrap_or(Path::new("."));
    let dlq_path = dir.join("dlq").join("wrangler.toml");
    let read = |p: &Path| read_toml(p).map_err(|f: Failure| format!("{}; {}", f.what, f.next));
    let (relay, dlq) = (read(config)?, read(&dlq_path)?);
    let demo = std::fs::read_to_string(dir.join(".dev.vars.example"))
        .ok()
        .map(|t| parse_dev_vars(&t));
    let (relay_label, dlq_label) = (config.display().to_string(), dlq_path.display().to_string());
    check_deployment(&Deployment {
        relay: ConfigFile {
            label: &relay_label,
            table: &relay,
        },
        dlq: ConfigFile {
            label: &dlq_label,
            table: &dlq,
        },
        demo_vars: demo.as_ref(),
    })?;
    let mut what = format!("{relay_label} and {dlq_label}, every [env.*]");
    if demo.is_some() {
        what.push_str(", the demo (.dev.vars.example)");
    }
    if let Ok(entries) = std::fs::read_dir(dir.join("migrations")) {
        let names: Vec<String> = entries
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        check_migrations(&names)?;
        what.push_str(", migrations/");
    }
    Ok(what)
}

/// The layered configuration by the startup's rules (every secret the
/// check lacks stood in for, and said), as a tree.
fn effective(p: &Project, env: Option<&str>) -> Result<String, String> {
    let mut vars = p.vars.clone();
    let specs = load_sources(&vars).map_err(|e| format!("{}: {}", e.key, e.problem))?;
    let destinations =
        stand_in_destination_secrets(&mut vars).map_err(|e| format!("{}: {}", e.key, e.problem))?;
    let table = env_table(&p.relay, env);
    check_bindings(&destinations, |kind, name| {
        declares_binding(table, kind, name)
    })
    .map_err(|e| format!("{}: {}", e.key, e.problem))?;
    let mut missing = Vec::new();
    for s in specs.iter().filter(|s| s.needs_secret()) {
        if let Entry::Vacant(slot) = vars.entry(s.secret_name()) {
            missing.push(s.secret_name());
            slot.insert(Value::String("config-check:stand-in".into()));
        }
    }
    vars.entry("DOWNSTREAM_SIGNING_SECRET".into())
        .or_insert_with(|| Value::String("config-check:stand-in".into()));
    RelayConfig::load(&vars).map_err(|e| format!("{}: {}", e.key, e.problem))?;
    Ok(tree(p, &specs, &destinations, &missing))
}

fn env_table<'a>(relay: &'a Value, env: Option<&str>) -> &'a Value {
    env.and_then(|e| relay.get("env").and_then(|t| t.get(e)))
        .unwrap_or(relay)
}

/// The sources, their schemes and routes, and the destinations, as a tree.
fn tree(
    p: &Project,
    specs: &[SourceSpec],
    destinations: &[Destination],
    missing: &[String],
) -> String {
    let from = |k: &str| {
        p.origin
            .get(k)
            .cloned()
            .unwrap_or_else(|| "nowhere (none declared)".into())
    };
    let secrets = p.dev_vars.as_ref().map_or("the environment".into(), |f| {
        format!("the environment, else {}", f.display())
    });
    let mut out = vec![format!(
        "configuration ok: SOURCES from {}, DESTINATIONS from {}, secrets from {secrets}",
        from("SOURCES"),
        from("DESTINATIONS")
    )];
    out.push(format!("sources ({})", specs.len()));
    for (i, s) in specs.iter().enumerate() {
        source_lines(s, i + 1 == specs.len(), missing, &mut out);
    }
    out.push(format!("destinations ({})", destinations.len()));
    for (i, d) in destinations.iter().enumerate() {
        let branch = if i + 1 == destinations.len() {
            "└─"
        } else {
            "├─"
        };
        out.push(format!("{branch} {}  {}", d.name, destination_line(d)));
    }
    out.join("\n")
}

/// One source: its scheme and secret, then its routes under it.
fn source_lines(s: &SourceSpec, last: bool, missing: &[String], out: &mut Vec<String>) {
    let (branch, stem) = if last {
        ("└─", "   ")
    } else {
        ("├─", "│  ")
    };
    let secret = match (s.needs_secret(), missing.contains(&s.secret_name())) {
        (false, _) => "public_key".to_string(),
        (true, false) => format!("{} set", s.secret_name()),
        (true, true) => format!("{} not set here", s.secret_name()),
    };
    out.push(format!(
        "{branch} {}  scheme {}  tolerance {}s  {secret}",
        s.name, s.scheme.name, s.tolerance_s
    ));
    let routes: Vec<String> = match &s.downstream {
        Some(url) => vec![format!(
            "→ {} (downstream {})",
            s.name,
            destination_label(url)
        )],
        None => s
            .routes
            .iter()
            .map(|r| {
                let filtered = if r.filter.is_some() {
                    " (filtered)"
                } else {
                    ""
                };
                format!("→ {}{filtered}", r.to)
            })
            .collect(),
    };
    if routes.is_empty() {
        out.push(format!(
            "{stem}└─ no routes: events are stored, not delivered"
        ));
    }
    for (j, r) in routes.iter().enumerate() {
        let branch = if j + 1 == routes.len() {
            "└─"
        } else {
            "├─"
        };
        out.push(format!("{stem}{branch} route {r}"));
    }
}

fn destination_line(d: &Destination) -> String {
    let target = match &d.target {
        Target::Url(url) => format!("url {}", destination_label(url)),
        Target::Service(b) => format!("service binding {b}"),
        Target::Queue(b) => format!("queue binding {b}"),
        // Nothing is called, so no auth, rate or timeout to show.
        Target::Pull(p) => return format!("pull  lease {}s", p.lease_s),
    };
    let auth = d.auth.as_ref().map_or(String::new(), |_| {
        format!("  auth ({})", d.auth_secret_name())
    });
    let rate = d
        .rate_per_s
        .map_or(String::new(), |r| format!("  rate {r}/s"));
    format!("{target}{auth}{rate}  timeout {}ms", d.timeout_ms)
}
