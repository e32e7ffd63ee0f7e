//! What the CLI does without a relay, with the core's own rules: the
//! configuration as `npm start` layers it (`project`), a captured request
//! (`request_file`) judged as the front door judges it (`judge`), the
//! WebCrypto steps run natively (`native_crypto`), and a test webhook
//! signed as its provider would (`provider_sign`).

pub mod judge;
pub mod native_crypto;
pub mod project;
pub mod provider_sign;
pub mod request_file;

use crate::failure::Failure;
use hookrelay_core::support::env::ConfigError;

/// A configuration error, naming its path, and where to fix it.
pub fn config_failure(e: &ConfigError, p: &project::Project) -> Failure {
    let place = if e.key.starts_with("SOURCES") || e.key.starts_with("DESTINATIONS") {
        let key = if e.key.starts_with("SOURCES") {
            "SOURCES"
        } else {
            "DESTINATIONS"
        };
        p.origin
            .get(key)
            .cloned()
            .unwrap_or_else(|| p.relay_path.display().to_string())
    } else if e.key.contains("SECRET") {
        let beside = p
            .relay_path
            .parent()
            .map(|d| d.join(".dev.vars"))
            .unwrap_or_default();
        format!(
            "the environment (export {}=…) or {}",
            e.key,
            beside.display()
        )
    } else {
        p.relay_path.display().to_string()
    };
    Failure::failed(
        format!("{}: {}", e.key, e.problem),
        format!("fix it in {place}"),
    )
}
