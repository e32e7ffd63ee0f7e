//! The relay's own bindings, by the names its glue uses (`env.d1("DB")`,
//! `env.queue("WEBHOOKS")`, …; `wrangler.toml` declares each): its queues,
//! the DLQ worker's service, D1, R2, Analytics Engine and the signature
//! rate limiter. A destination on one of them would feed the relay's own
//! machinery (a message on `WEBHOOKS` comes back as an event), so the
//! configuration refuses it (`crate::deliver::destinations`, DESIGN §3).
//! A test reads the glue's sources so that this list and the names the
//! code uses cannot drift.

/// The queue the relay ingests from (producer binding).
pub const WEBHOOKS: &str = "WEBHOOKS";
/// The dead-letter queue (producer binding).
pub const WEBHOOKS_DLQ: &str = "WEBHOOKS_DLQ";
/// The deliveries queue (producer binding).
pub const DELIVERIES: &str = "DELIVERIES";
/// The control queue: drain steps, the sweep's continuation.
pub const CONTROL: &str = "CONTROL";
/// The DLQ worker (service binding).
pub const DLQ: &str = "DLQ";

/// Every binding name the relay declares for itself.
pub const RELAY_BINDINGS: &[&str] = &[
    WEBHOOKS,
    WEBHOOKS_DLQ,
    DELIVERIES,
    CONTROL,
    DLQ,
    "DB",
    "ARCHIVE",
    "METRICS",
    "SIGNATURE_LIMITER",
];

#[cfg(test)]
mod tests {
    use super::RELAY_BINDINGS;
    use std::path::Path;

    /// Every `"NAME"` the glue passes to a binding lookup.
    fn names_in(dir: &Path, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                names_in(&path, out);
                continue;
            }
            if path.extension().and_then(|e| e.to_str()) != Some("rs") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            for call in [
                ".d1(\"",
                ".queue(\"",
                ".service(\"",
                "start_json(env, \"",
                "BINDING: &str = \"",
            ] {
                for piece in text.split(call).skip(1) {
                    let name: String = piece.chars().take_while(|c| *c != '"').collect();
                    out.push(format!("{name} ({})", path.display()));
                }
            }
        }
    }

    #[test]
    fn every_binding_the_relay_glue_uses_is_listed() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut used = Vec::new();
        for dir in ["src", "platform/src", "core/src/receive"] {
            names_in(&root.join(dir), &mut used);
        }
        assert!(
            used.len() > 10,
            "the glue's binding lookups were found: {used:?}"
        );
        for name in used {
            let bare = name.split(' ').next().unwrap();
            assert!(
                RELAY_BINDINGS.contains(&bare),
                "{name} is not in RELAY_BINDINGS"
            );
        }
    }
}
