//! Downstream delivery settings: where each source forwards, how calls are
//! signed and timed, and the breaker and parking rules around them.

use super::destinations::{load_destinations, Destination, Routed};
use super::env::{parse_bounded, text, ConfigEnv, ConfigError};
use super::sources::SourceSpec;
use crate::breaker::{BreakerConfig, BreakerOpenAction};
use crate::parking::config::ParkingConfig;
use crate::signature::{KeyForm, SigningKey};
use std::collections::BTreeMap;

/// Default `DELIVERY_TIMEOUT_MS`.
pub const DEFAULT_DELIVERY_TIMEOUT_MS: u64 = 10_000;

/// Downstream delivery settings, shared by the consumer and by replay.
#[derive(Debug, Clone)]
pub struct DeliveryConfig {
    /// Every destination by name: `DESTINATIONS`, and one per
    /// `downstream` source, named after it.
    pub destinations: BTreeMap<String, Destination>,
    /// Source name to the destinations it routes to, for sources that
    /// forward (a `downstream` source routes to its own destination).
    pub routes: BTreeMap<String, Vec<String>>,
    /// The key from `DOWNSTREAM_SIGNING_SECRET`; required when any source forwards.
    pub signing_key: Option<SigningKey>,
    /// `DELIVERY_TIMEOUT_MS`: per-attempt timeout.
    pub timeout_ms: u64,
    /// `BREAKER_FAILURE_THRESHOLD`, `BREAKER_SUCCESS_THRESHOLD`, `BREAKER_COOLDOWN_S`.
    pub breaker: BreakerConfig,
    /// `BREAKER_OPEN_ACTION`: `park` (default), `retry` or `dead-letter`.
    pub breaker_open_action: BreakerOpenAction,
    /// `DRAIN_RATE_PER_S` and `PARK_MAX_AGE`.
    pub parking: ParkingConfig,
}

impl DeliveryConfig {
    /// Whether events of `source` are forwarded to a downstream.
    pub fn forwards(&self, source: &str) -> bool {
        self.routes.contains_key(source)
    }

    /// Where an event of `source` goes (routes are unfiltered in this
    /// stand-in: every route matches; the headers, body and content type
    /// are what A's filters read).
    pub fn route(
        &self,
        source: &str,
        _headers: &BTreeMap<String, String>,
        _body: &str,
        _content_type: Option<&str>,
    ) -> Routed {
        match self.routes.get(source) {
            None => Routed::NoRoutes,
            Some(to) => Routed::Routed {
                matched: to.clone(),
                unmatched: Vec::new(),
            },
        }
    }

    /// The destination named `name`, if configured.
    pub fn destination(&self, name: &str) -> Option<&Destination> {
        self.destinations.get(name)
    }

    /// A destination's per-call timeout: its own `timeout_ms`, else
    /// `DELIVERY_TIMEOUT_MS`.
    pub fn timeout_of(&self, name: &str) -> u64 {
        self.destination(name)
            .and_then(|d| d.timeout_ms)
            .unwrap_or(self.timeout_ms)
    }

    /// Reads the delivery settings for the declared sources.
    pub fn load(env: &impl ConfigEnv, specs: &[SourceSpec]) -> Result<DeliveryConfig, ConfigError> {
        // Inserted one by one: `collect` into a map sorts first, and that
        // sort is a few KB of wasm for this one type.
        let mut destinations = load_destinations(env)?;
        let routes = routes_of(specs, &mut destinations)?;
        let signing_key = text(env, "DOWNSTREAM_SIGNING_SECRET")
            .and_then(|s| SigningKey::from_secret(KeyForm::Raw, &s).ok());
        if signing_key.is_none() && !routes.is_empty() {
            let names: Vec<&str> = routes.keys().map(String::as_str).collect();
            return Err(ConfigError::new(
                "DOWNSTREAM_SIGNING_SECRET",
                format!("is not set, but source(s) {} forward to a downstream; set it with `wrangler secret put DOWNSTREAM_SIGNING_SECRET`", names.join(", ")),
            ));
        }
        let breaker_open_action = match text(env, "BREAKER_OPEN_ACTION") {
            None => BreakerOpenAction::default(),
            Some(raw) => BreakerOpenAction::parse(&raw).ok_or_else(|| {
                ConfigError::new(
                    "BREAKER_OPEN_ACTION",
                    "must be `park`, `retry` or `dead-letter`",
                )
            })?,
        };
        Ok(DeliveryConfig {
            destinations,
            routes,
            signing_key,
            timeout_ms: parse_bounded(
                env,
                "DELIVERY_TIMEOUT_MS",
                DEFAULT_DELIVERY_TIMEOUT_MS,
                100..=120_000,
            )?,
            breaker: BreakerConfig {
                failure_threshold: parse_bounded(env, "BREAKER_FAILURE_THRESHOLD", 5, 1..=1000)?
                    as u32,
                success_threshold: parse_bounded(env, "BREAKER_SUCCESS_THRESHOLD", 1, 1..=100)?
                    as u32,
                cooldown_ms: parse_bounded(env, "BREAKER_COOLDOWN_S", 60, 1..=86_400)? as i64
                    * 1000,
            },
            breaker_open_action,
            parking: ParkingConfig::load(env)?,
        })
    }
}

/// Each forwarding source's routes: a `downstream` source's one route to
/// the destination named after it (added to `destinations`), else its
/// `routes`, each naming a declared destination.
fn routes_of(
    specs: &[SourceSpec],
    destinations: &mut BTreeMap<String, Destination>,
) -> Result<BTreeMap<String, Vec<String>>, ConfigError> {
    let mut routes = BTreeMap::new();
    for s in specs {
        if let Some(url) = &s.downstream {
            if destinations.contains_key(&s.name) {
                return Err(ConfigError::new(
                    format!("DESTINATIONS.{}", s.name),
                    format!("is named like source '{}', which uses downstream (a destination named after it); rename the destination, or give the source routes", s.name),
                ));
            }
            let own = Destination {
                name: s.name.clone(),
                url: url.clone(),
                rate_per_s: None,
                timeout_ms: None,
            };
            destinations.insert(s.name.clone(), own);
            routes.insert(s.name.clone(), vec![s.name.clone()]);
        }
    }
    for s in specs {
        let Some(to) = &s.routes else { continue };
        if let Some((i, name)) = to
            .iter()
            .enumerate()
            .find(|(_, n)| !destinations.contains_key(*n))
        {
            return Err(ConfigError::new(
                format!("SOURCES.{}.routes[{i}].to", s.name),
                format!("names '{name}', which is not a destination; declare it in DESTINATIONS"),
            ));
        }
        routes.insert(s.name.clone(), to.clone());
    }
    Ok(routes)
}
