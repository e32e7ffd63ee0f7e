//! The relay configuration, validated once per isolate.

use hookrelay_core::config::RelayConfig;
use hookrelay_core::deliver::check_bindings;
use hookrelay_core::metrics::Component;
use hookrelay_core::support::env::ConfigError;
use hookrelay_platform::env_config::{binding_declared, WorkerEnv};
use hookrelay_platform::log;
use std::cell::OnceCell;
use std::rc::Rc;
use worker::Env;

thread_local! {
    static CONFIG: OnceCell<Rc<Result<RelayConfig, ConfigError>>> = const { OnceCell::new() };
}

/// The validated configuration, or the error that names the bad key. The
/// first call in an isolate parses and logs the outcome; later calls reuse it.
pub fn relay_config(env: &Env) -> Rc<Result<RelayConfig, ConfigError>> {
    CONFIG.with(|cell| {
        cell.get_or_init(|| {
            // The bindings a destination names are the user's to declare:
            // one missing is refused here, as a bad setting is.
            let loaded = RelayConfig::load(&WorkerEnv(env)).and_then(|c| {
                check_bindings(&c.delivery.destinations, |kind, name| {
                    binding_declared(env, kind, name)
                })?;
                Ok(c)
            });
            match &loaded {
                Ok(c) => log::info(
                    Component::Relay,
                    "config_loaded",
                    log::fields!{"sources": c.sources.keys().collect::<Vec<_>>(), "retry_delays_s": c.retry.delays_s().to_vec()},
                ),
                Err(e) => log::error(
                    Component::Relay,
                    "config_invalid",
                    log::fields!{"key": e.key, "problem": e.problem},
                ),
            }
            Rc::new(loaded)
        })
        .clone()
    })
}
