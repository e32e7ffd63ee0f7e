//! Queue names are configuration: each worker reads the names of the queues
//! it consumes from vars (`QUEUE_WEBHOOKS`, `QUEUE_CONTROL`, `QUEUE_DELIVERIES`; `QUEUE_DLQ`,
//! `QUEUE_JOBS`), defaulting to today's names, and a batch is dispatched
//! by equality with them. A batch from a queue no var names is an error,
//! never an event.
//!
//! The DLQ worker also reads the relay's `QUEUE_WEBHOOKS` and
//! `QUEUE_DELIVERIES` ([`OriginQueues`]), to name in an envelope the queue
//! a dead letter failed on.
//!
//! A worker's queues are one table ([`RELAY_QUEUES`], [`DLQ_QUEUES`]), so
//! another consumed queue is one more row and one more [`Consumer`].

use super::env::{text, ConfigEnv, ConfigError};

/// Which of the relay's consumers a batch goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RelayConsumer {
    /// The `webhooks` consumer: ingest, then delivery.
    Webhooks,
    /// The drain steps for parked events.
    Control,
    /// One message per delivery (one event to one destination).
    Deliveries,
}

/// Which of the DLQ worker's consumers a batch goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DlqConsumer {
    /// The triage of dead letters.
    Triage,
    /// The job steps.
    Jobs,
}

/// One consumed queue: the var naming it, its default name, its consumer.
#[derive(Debug, Clone, Copy)]
pub struct QueueVar<C> {
    /// The var that names the queue.
    pub var: &'static str,
    /// The name when the var is unset (the names deployments already use).
    pub default: &'static str,
    /// Who consumes it.
    pub consumer: C,
}

/// The queues the relay consumes.
pub const RELAY_QUEUES: &[QueueVar<RelayConsumer>] = &[
    QueueVar {
        var: "QUEUE_WEBHOOKS",
        default: "webhooks",
        consumer: RelayConsumer::Webhooks,
    },
    QueueVar {
        var: "QUEUE_CONTROL",
        default: "hookrelay-control",
        consumer: RelayConsumer::Control,
    },
    QueueVar {
        var: "QUEUE_DELIVERIES",
        default: "deliveries",
        consumer: RelayConsumer::Deliveries,
    },
];

/// The queues the DLQ worker consumes.
pub const DLQ_QUEUES: &[QueueVar<DlqConsumer>] = &[
    QueueVar {
        var: "QUEUE_DLQ",
        default: "webhooks-dlq",
        consumer: DlqConsumer::Triage,
    },
    QueueVar {
        var: "QUEUE_JOBS",
        default: "hookrelay-jobs",
        consumer: DlqConsumer::Jobs,
    },
];

/// The relay's queues a dead letter can come from, named as the relay
/// names them (`QUEUE_WEBHOOKS`, `QUEUE_DELIVERIES`, repeated in the DLQ
/// worker's vars): the DLQ worker writes the one a message failed on into
/// its envelope. A moved message does not say its queue (its DLQ batch is
/// the DLQ's), so its kind picks it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OriginQueues {
    /// Where events are ingested (`QUEUE_WEBHOOKS`).
    pub webhooks: String,
    /// Where one destination's delivery is made (`QUEUE_DELIVERIES`).
    pub deliveries: String,
}

impl OriginQueues {
    /// Reads both names: a var's value, or today's default.
    pub fn load(env: &impl ConfigEnv) -> Result<OriginQueues, ConfigError> {
        let read = |var: &str, default: &str| {
            let name = text(env, var).unwrap_or_else(|| default.to_string());
            check_name(var, &name).map(|()| name)
        };
        Ok(OriginQueues {
            webhooks: read("QUEUE_WEBHOOKS", "webhooks")?,
            deliveries: read("QUEUE_DELIVERIES", "deliveries")?,
        })
    }

    /// The queue a moved message of this kind was consumed from.
    pub fn of(&self, delivery: bool) -> &str {
        if delivery {
            &self.deliveries
        } else {
            &self.webhooks
        }
    }
}

impl Default for OriginQueues {
    /// Today's names, for a worker whose vars leave them unset.
    fn default() -> OriginQueues {
        OriginQueues {
            webhooks: "webhooks".to_string(),
            deliveries: "deliveries".to_string(),
        }
    }
}

/// A worker's consumed queues, by name, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueNames<C>(Vec<(String, C)>);

/// A batch from a queue this worker was not configured to consume.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownQueue {
    /// The batch's queue name.
    pub queue: String,
    /// What the worker consumes, as `VAR=name` pairs, for the log line.
    pub configured: String,
}

impl<C: Copy> QueueNames<C> {
    /// Reads the names of `table`'s queues: a var's value, or its default.
    /// A name must be one Cloudflare accepts, and no two alike.
    pub fn load(env: &impl ConfigEnv, table: &[QueueVar<C>]) -> Result<QueueNames<C>, ConfigError> {
        let mut names: Vec<(String, C)> = Vec::with_capacity(table.len());
        for row in table {
            let name = text(env, row.var).unwrap_or_else(|| row.default.to_string());
            check_name(row.var, &name)?;
            if let Some(i) = names.iter().position(|(n, _)| *n == name) {
                return Err(ConfigError::new(
                    row.var,
                    format!(
                        "names the queue '{name}', as {} does; each consumed queue needs its own name",
                        table[i].var
                    ),
                ));
            }
            names.push((name, row.consumer));
        }
        Ok(QueueNames(names))
    }

    /// The consumer of a batch from `queue`, by equality with the names read.
    pub fn consumer(&self, queue: &str) -> Result<C, UnknownQueue> {
        self.0
            .iter()
            .find(|(name, _)| name == queue)
            .map(|(_, c)| *c)
            .ok_or_else(|| UnknownQueue {
                queue: queue.to_string(),
                configured: self
                    .0
                    .iter()
                    .map(|(name, _)| name.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            })
    }
}

/// Cloudflare's rule for a queue name: 1 to 63 lower-case letters, digits
/// and `-`, not starting or ending with `-`.
fn check_name(var: &str, name: &str) -> Result<(), ConfigError> {
    let ok = (1..=63).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-');
    if ok {
        Ok(())
    } else {
        Err(ConfigError::new(
            var,
            format!("'{name}' is not a queue name: use 1 to 63 lower-case letters, digits and -, as in wrangler.toml's [[queues.consumers]] queue"),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};
    use std::collections::BTreeMap;

    fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, Value> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), json!(v)))
            .collect()
    }

    #[test]
    fn a_batch_goes_to_the_consumer_of_the_queue_named_so() {
        let staging = env(&[
            ("QUEUE_WEBHOOKS", "webhooks-staging"),
            ("QUEUE_CONTROL", "hookrelay-control-staging"),
            ("QUEUE_DLQ", "webhooks-dlq-staging"),
            ("QUEUE_JOBS", "hookrelay-jobs-staging"),
        ]);
        let relay: &[(&BTreeMap<String, Value>, &str, Option<RelayConsumer>)] = &[
            (&env(&[]), "webhooks", Some(RelayConsumer::Webhooks)),
            (&env(&[]), "hookrelay-control", Some(RelayConsumer::Control)),
            (&staging, "webhooks-staging", Some(RelayConsumer::Webhooks)),
            (
                &staging,
                "hookrelay-control-staging",
                Some(RelayConsumer::Control),
            ),
            // The production names, seen by a staging worker: not its queues.
            (&staging, "webhooks", None),
            (&staging, "hookrelay-control", None),
            // Anything else is never taken for the main queue.
            (&env(&[]), "webhooks-dlq", None),
            (&env(&[]), "hookrelay-jobs", None),
            (&env(&[]), "", None),
            (&env(&[]), "Webhooks", None),
        ];
        for (vars, queue, want) in relay {
            let names = QueueNames::load(*vars, RELAY_QUEUES).unwrap();
            assert_eq!(names.consumer(queue).ok(), *want, "relay, queue {queue:?}");
        }
        let dlq: &[(&BTreeMap<String, Value>, &str, Option<DlqConsumer>)] = &[
            (&env(&[]), "webhooks-dlq", Some(DlqConsumer::Triage)),
            (&env(&[]), "hookrelay-jobs", Some(DlqConsumer::Jobs)),
            (&staging, "webhooks-dlq-staging", Some(DlqConsumer::Triage)),
            (&staging, "hookrelay-jobs-staging", Some(DlqConsumer::Jobs)),
            (&staging, "hookrelay-jobs", None),
            (&staging, "webhooks-dlq", None),
            (&env(&[]), "webhooks", None),
            (&env(&[]), "Webhooks-DLQ", None),
        ];
        for (vars, queue, want) in dlq {
            let names = QueueNames::load(*vars, DLQ_QUEUES).unwrap();
            assert_eq!(names.consumer(queue).ok(), *want, "dlq, queue {queue:?}");
        }
    }

    #[test]
    fn an_unknown_queue_names_the_configured_ones() {
        let names = QueueNames::load(&env(&[]), RELAY_QUEUES).unwrap();
        let err = names.consumer("other").unwrap_err();
        assert_eq!(err.queue, "other");
        assert_eq!(err.configured, "webhooks, hookrelay-control, deliveries");
    }

    #[test]
    fn bad_queue_names_are_refused_naming_the_var() {
        let cases: &[(&[(&str, &str)], &str)] = &[
            (&[("QUEUE_WEBHOOKS", "")], "QUEUE_WEBHOOKS"),
            (&[("QUEUE_WEBHOOKS", "Webhooks")], "QUEUE_WEBHOOKS"),
            (&[("QUEUE_CONTROL", "hook relay")], "QUEUE_CONTROL"),
            (&[("QUEUE_CONTROL", "-control")], "QUEUE_CONTROL"),
            (&[("QUEUE_CONTROL", "webhooks")], "QUEUE_CONTROL"),
            (&[("QUEUE_WEBHOOKS", &"q".repeat(64))], "QUEUE_WEBHOOKS"),
        ];
        for (vars, key) in cases {
            let err = QueueNames::load(&env(vars), RELAY_QUEUES).unwrap_err();
            assert_eq!(err.key, *key, "{vars:?}");
        }
        assert!(
            QueueNames::load(&env(&[("QUEUE_JOBS", "q".repeat(63).as_str())]), DLQ_QUEUES).is_ok()
        );
    }

    #[test]
    fn a_dead_letter_names_the_relay_queue_its_kind_came_from() {
        let staging = env(&[
            ("QUEUE_WEBHOOKS", "webhooks-staging"),
            ("QUEUE_DELIVERIES", "deliveries-staging"),
        ]);
        let cases: &[(&BTreeMap<String, Value>, bool, &str)] = &[
            (&env(&[]), false, "webhooks"),
            (&env(&[]), true, "deliveries"),
            (&staging, false, "webhooks-staging"),
            (&staging, true, "deliveries-staging"),
        ];
        for (vars, delivery, want) in cases {
            let names = OriginQueues::load(*vars).unwrap();
            assert_eq!(names.of(*delivery), *want, "{vars:?}, delivery {delivery}");
        }
        assert_eq!(
            OriginQueues::load(&env(&[])).unwrap(),
            OriginQueues::default()
        );
        let err = OriginQueues::load(&env(&[("QUEUE_DELIVERIES", "Deliveries")])).unwrap_err();
        assert_eq!(err.key, "QUEUE_DELIVERIES");
    }
}
