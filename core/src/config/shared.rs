//! The settings both workers read, and the rule that keeps them alike: the
//! relay sweeps and alarms by them, the DLQ worker enforces or shows them
//! (`/audit`'s `held_since`, the alerts' window, the stats' retention
//! figures). Each worker reads its own `[vars]`, so a value declared in one
//! file only leaves the other on its default; `build.rs` refuses that.

use crate::support::env::{text, ConfigEnv, ConfigError};

/// The keys both workers read, and what each worker does with them.
pub const SHARED_KEYS: [(&str, &str); 4] = [
    (
        "EVENT_RETENTION",
        "the relay sweeps events by it, the DLQ worker's stats show it",
    ),
    (
        "DLQ_RETENTION",
        "the relay sweeps resolved dead letters by it, the DLQ worker's /audit, alerts and stats count from it",
    ),
    (
        "D1_MAX_BYTES",
        "the relay's sweep and storage alarm use it, the DLQ worker's stats show it",
    ),
    (
        "DLQ_CAPACITY",
        "the DLQ worker enforces it, the relay's watchdog alarms at 90% of it",
    ),
];

/// One worker's settings and the file they come from (for the message).
pub struct Declared<'a, E: ConfigEnv> {
    /// e.g. `wrangler.toml`.
    pub file: &'a str,
    /// Its `[vars]`.
    pub vars: &'a E,
}

/// Refuses a shared key that the two files declare differently, or that
/// only one declares; the error names the key, both files and the values.
pub fn check_shared<A: ConfigEnv, B: ConfigEnv>(
    relay: Declared<'_, A>,
    dlq: Declared<'_, B>,
) -> Result<(), ConfigError> {
    for (key, why) in SHARED_KEYS {
        let (a, b) = (text(relay.vars, key), text(dlq.vars, key));
        if a == b {
            continue;
        }
        let shown = |v: &Option<String>, file: &str| match v {
            Some(v) => format!("{file} declares {v:?}"),
            None => format!("{file} does not declare it"),
        };
        return Err(ConfigError::new(
            key,
            format!(
                "{} but {}; both workers read it ({why}), so declare it with the same value in both files, or in neither",
                shown(&a, relay.file),
                shown(&b, dlq.file)
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};
    use std::collections::BTreeMap;

    /// One file's `[vars]`, as pairs.
    type Vars<'a> = &'a [(&'a str, Value)];

    fn vars(pairs: &[(&str, Value)]) -> BTreeMap<String, Value> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect()
    }

    fn check(relay: &[(&str, Value)], dlq: &[(&str, Value)]) -> Result<(), ConfigError> {
        let (r, d) = (vars(relay), vars(dlq));
        check_shared(
            Declared {
                file: "wrangler.toml",
                vars: &r,
            },
            Declared {
                file: "dlq/wrangler.toml",
                vars: &d,
            },
        )
    }

    #[test]
    fn shared_settings_must_be_declared_alike_in_both_files_or_in_neither() {
        let ok: [(Vars, Vars); 4] = [
            (&[], &[]),
            (
                &[("EVENT_RETENTION", json!("7d"))],
                &[("EVENT_RETENTION", json!("7d"))],
            ),
            (
                &[("DLQ_CAPACITY", json!("10000")), ("OTHER", json!("x"))],
                &[("DLQ_CAPACITY", json!("10000"))],
            ),
            // A number and its text are one value to the parsers.
            (
                &[("DLQ_CAPACITY", json!(500))],
                &[("DLQ_CAPACITY", json!("500"))],
            ),
        ];
        for (relay, dlq) in ok {
            assert_eq!(check(relay, dlq), Ok(()), "{relay:?} / {dlq:?}");
        }
        let refused: [(Vars, Vars, &str, &str); 5] = [
            (
                &[("EVENT_RETENTION", json!("7d"))],
                &[],
                "EVENT_RETENTION",
                "wrangler.toml declares \"7d\" but dlq/wrangler.toml does not declare it",
            ),
            (
                &[],
                &[("DLQ_RETENTION", json!("30d"))],
                "DLQ_RETENTION",
                "wrangler.toml does not declare it but dlq/wrangler.toml declares \"30d\"",
            ),
            (
                &[("D1_MAX_BYTES", json!("5GB"))],
                &[("D1_MAX_BYTES", json!("6GB"))],
                "D1_MAX_BYTES",
                "declares \"5GB\" but dlq/wrangler.toml declares \"6GB\"",
            ),
            (
                &[("DLQ_CAPACITY", json!("3"))],
                &[],
                "DLQ_CAPACITY",
                "does not declare it",
            ),
            (
                &[
                    ("EVENT_RETENTION", json!("1d")),
                    ("DLQ_RETENTION", json!("2d")),
                ],
                &[("EVENT_RETENTION", json!("1d"))],
                "DLQ_RETENTION",
                "both workers read it",
            ),
        ];
        for (relay, dlq, key, says) in refused {
            let e = check(relay, dlq).unwrap_err();
            assert_eq!(e.key, key, "{relay:?} / {dlq:?}");
            assert!(e.problem.contains(says), "{}", e.problem);
        }
    }
}
