//! The relay's configuration narrowed to one source, for work done away
//! from the relay with the relay's rules: checking a captured request
//! (`hookrelay verify`) and signing a test webhook (`hookrelay send`).
//! Only that source's secret is needed: the other sources are left out,
//! and a destination secret or the downstream signing secret, which
//! verifying never uses, is stood in for when absent (as the build does).

use super::build_check::stand_in_destination_secrets;
use super::RelayConfig;
use crate::receive::sources::load_sources;
use crate::support::env::{object_var, ConfigError};
use serde_json::Value;
use std::collections::BTreeMap;

/// The secret every URL destination's calls are signed with.
const DOWNSTREAM_SIGNING_SECRET: &str = "DOWNSTREAM_SIGNING_SECRET";

/// `vars` (the effective vars and secrets) with `SOURCES` narrowed to
/// `name`, loaded as the relay loads its configuration. An unknown source
/// is refused naming the ones declared.
pub fn config_for_source(
    vars: &BTreeMap<String, Value>,
    name: &str,
) -> Result<RelayConfig, ConfigError> {
    let specs = load_sources(vars)?;
    if !specs.iter().any(|s| s.name == name) {
        let known: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
        return Err(ConfigError::new(
            "SOURCES",
            match known.is_empty() {
                true => format!("declares no sources, so none is named '{name}'; declare it in wrangler.toml [vars] (or SOURCES in the environment or .dev.vars)"),
                false => format!("has no source named '{name}'; it declares {}", known.join(", ")),
            },
        ));
    }
    let raw = vars.get("SOURCES").expect("load_sources read it");
    let all = object_var("SOURCES", raw, "source name to {\"scheme\": …}")?;
    let mut narrowed = vars.clone();
    let one: serde_json::Map<String, Value> = all
        .iter()
        .filter(|(k, _)| k.as_str() == name)
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    narrowed.insert("SOURCES".into(), Value::Object(one));
    stand_in_destination_secrets(&mut narrowed)?;
    narrowed
        .entry(DOWNSTREAM_SIGNING_SECRET.into())
        .or_insert_with(|| Value::String("one-source:stand-in".into()));
    RelayConfig::load(&narrowed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn vars(pairs: &[(&str, Value)]) -> BTreeMap<String, Value> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect()
    }

    #[test]
    fn only_the_named_sources_secret_is_needed() {
        let sources = json!({"a": {"scheme": "github"}, "b": {"scheme": "stripe", "downstream": "https://x.example/h"}});
        let v = vars(&[
            ("SOURCES", Value::String(sources.to_string())),
            ("WEBHOOK_SECRET_A", json!("s")),
        ]);
        let cfg = config_for_source(&v, "a").unwrap();
        assert_eq!(cfg.sources.keys().collect::<Vec<_>>(), ["a"]);
        // b's secret and the downstream signing secret are missing: b cannot load.
        let err = config_for_source(&v, "b").unwrap_err();
        assert_eq!(err.key, "WEBHOOK_SECRET_B");
        let v = vars(&[("SOURCES", sources), ("WEBHOOK_SECRET_B", json!("whsec_x"))]);
        assert!(config_for_source(&v, "b").is_ok());
    }

    #[test]
    fn an_unknown_source_is_refused_naming_the_declared_ones() {
        let v = vars(&[("SOURCES", json!({"a": {"scheme": "github"}}))]);
        let err = config_for_source(&v, "nope").unwrap_err();
        assert_eq!(err.key, "SOURCES");
        assert!(err.problem.contains("declares a"), "{}", err.problem);
        let v = vars(&[("SOURCES", json!({}))]);
        assert!(config_for_source(&v, "a")
            .unwrap_err()
            .problem
            .contains("declares no sources"));
        let bad = vars(&[("SOURCES", json!({"a": {"scheme": "nope"}}))]);
        assert_eq!(
            config_for_source(&bad, "a").unwrap_err().key,
            "SOURCES.a.scheme"
        );
    }
}
