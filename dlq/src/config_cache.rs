//! The DLQ worker's configuration, validated once per isolate.

use hookrelay_core::admin::internal_token::SECRET_NAME;
use hookrelay_core::config::DlqConfig;
use hookrelay_core::metrics::Component;
use hookrelay_core::support::env::{ConfigEnv, ConfigError};
use hookrelay_platform::env_config::WorkerEnv;
use hookrelay_platform::log;
use serde_json::Value;
use std::cell::OnceCell;
use std::rc::Rc;
use worker::Env;

/// Everything the DLQ worker needs.
pub struct Config {
    /// Capacity, retry delay, replay limit.
    pub dlq: DlqConfig,
    /// `RELAY_INTERNAL_SECRET`: signs the replay calls to the relay, which
    /// alone holds the delivery configuration.
    pub internal_key: Vec<u8>,
    /// The `ADMIN_JWT_SECRET` bytes.
    pub admin_key: Vec<u8>,
}

thread_local! {
    static CONFIG: OnceCell<Rc<Result<Config, ConfigError>>> = const { OnceCell::new() };
}

fn load(env: &impl ConfigEnv) -> Result<Config, ConfigError> {
    let dlq = DlqConfig::load(env)?;
    let internal_key = match env.get(SECRET_NAME) {
        Some(Value::String(s)) if !s.is_empty() => s.into_bytes(),
        _ => {
            return Err(ConfigError::new(
                SECRET_NAME,
                "is not set; replays are carried out by the relay and this worker cannot prove its calls. Set the same value in both workers: `wrangler secret put RELAY_INTERNAL_SECRET` and `wrangler secret put RELAY_INTERNAL_SECRET --config dlq/wrangler.toml` (or in .dev.vars locally)",
            ))
        }
    };
    let admin_key = match env.get("ADMIN_JWT_SECRET") {
        Some(Value::String(s)) if !s.is_empty() => s.into_bytes(),
        _ => {
            return Err(ConfigError::new(
                "ADMIN_JWT_SECRET",
                "is not set; the admin API cannot authenticate anyone. Set it with `wrangler secret put ADMIN_JWT_SECRET --config dlq/wrangler.toml` (or in .dev.vars locally)",
            ))
        }
    };
    Ok(Config {
        dlq,
        internal_key,
        admin_key,
    })
}

/// The validated configuration, or the error naming the bad key.
pub fn config(env: &Env) -> Rc<Result<Config, ConfigError>> {
    CONFIG.with(|cell| {
        cell.get_or_init(|| {
            let loaded = load(&WorkerEnv(env));
            if let Err(e) = &loaded {
                log::error(
                    Component::Dlq,
                    "config_invalid",
                    log::fields! {"key": e.key, "problem": e.problem},
                );
            }
            Rc::new(loaded)
        })
        .clone()
    })
}
