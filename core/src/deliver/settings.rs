//! Delivery settings: the destinations and each source's routes to them
//! (a `downstream` being one unfiltered route to a destination named after
//! its source), how calls are signed and timed, and the breaker and
//! parking rules around them.

use super::destinations::{load_destinations, load_keys, Destination, DELIVERY_TIMEOUT_RANGE_MS};
use crate::deliver::breaker::{BreakerConfig, BreakerOpenAction};
use crate::parking::settings::ParkingConfig;
use crate::receive::sources::SourceSpec;
use crate::route::filter::Filter;
use crate::route::routes::{evaluate, Route, Routed};
use crate::signature::{KeyForm, SigningKey};
use crate::support::env::{parse_bounded, text, ConfigEnv, ConfigError};
use std::collections::BTreeMap;

/// Default `DELIVERY_TIMEOUT_MS`.
pub const DEFAULT_DELIVERY_TIMEOUT_MS: u64 = 10_000;

/// A source's name and its routes, in order.
pub type SourceRoutes = (String, Vec<Route>);

/// Downstream delivery settings, shared by the consumer and by replay.
#[derive(Debug, Clone)]
pub struct DeliveryConfig {
    /// Source name to downstream URL, for sources with `downstream` (the
    /// path today's consumer delivers by).
    pub downstreams: BTreeMap<String, String>,
    /// Every destination, in name order: the declared ones and one per
    /// `downstream`, named after its source.
    pub destinations: Vec<Destination>,
    /// Each source's routes, in source order; a source without routes is
    /// absent.
    pub routes: Vec<SourceRoutes>,
    /// The key from `DOWNSTREAM_SIGNING_SECRET`; required when any source
    /// routes to a destination without a signing key of its own.
    pub signing_key: Option<SigningKey>,
    /// `DELIVERY_TIMEOUT_MS`: per-attempt timeout.
    pub timeout_ms: u64,
    /// `BREAKER_FAILURE_THRESHOLD`, `BREAKER_SUCCESS_THRESHOLD`, `BREAKER_COOLDOWN_S`.
    pub breaker: BreakerConfig,
    /// `BREAKER_OPEN_ACTION`: `park` (default), `retry` or `dead-letter`.
    pub breaker_open_action: BreakerOpenAction,
    /// `DRAIN_RATE_PER_S` and `PARK_MAX_AGE`.
    pub parking: ParkingConfig,
    /// `MESSAGE_OVERDUE`: how long past its due time a delivery's message
    /// may be late before the periodic check sends it again
    /// (`crate::deliver::overdue`).
    pub message_overdue_ms: i64,
    /// `FIRST_ATTEMPT_BUDGET`: how long after a `webhooks` batch's calls
    /// begin its first attempts may still start
    /// (`crate::deliver::call_scheduler`).
    pub first_attempt_budget_ms: i64,
}

impl DeliveryConfig {
    /// Whether events of `source` are forwarded to a downstream.
    pub fn forwards(&self, source: &str) -> bool {
        self.routes.iter().any(|(s, _)| s == source)
    }

    /// The destination named `name`.
    pub fn destination(&self, name: &str) -> Option<&Destination> {
        self.destinations.iter().find(|d| d.name == name)
    }

    /// The key that signs calls to `d`: its own
    /// (`DESTINATION_SIGNING_SECRET_<NAME>`), else the shared one.
    pub fn signing_key_for<'a>(&'a self, d: &'a Destination) -> Option<&'a SigningKey> {
        d.keys.signing.as_ref().or(self.signing_key.as_ref())
    }

    /// A destination's per-call timeout (ms): its own `timeout_ms`, which
    /// defaults to `DELIVERY_TIMEOUT_MS`.
    pub fn timeout_of(&self, name: &str) -> u64 {
        self.destination(name)
            .map(|d| u64::from(d.timeout_ms))
            .unwrap_or(self.timeout_ms)
    }

    /// The pull destinations' names: their deliveries are only stored,
    /// never called nor sent a `deliveries` message (DESIGN §3).
    pub fn pull_names(&self) -> Vec<String> {
        self.destinations
            .iter()
            .filter(|d| d.pull().is_some())
            .map(|d| d.name.clone())
            .collect()
    }

    /// The destinations' names, in order.
    pub fn destination_names(&self) -> impl Iterator<Item = &str> {
        self.destinations.iter().map(|d| d.name.as_str())
    }

    /// Which of `source`'s routes one event takes (pure; the body is
    /// parsed only when a filter reads it).
    pub fn route(
        &self,
        source: &str,
        headers: &[(String, String)],
        body: &[u8],
        content_type: Option<&str>,
    ) -> Routed {
        match self.routes.iter().find(|(s, _)| s == source) {
            Some((_, routes)) => evaluate(routes, headers, body, content_type),
            None => Routed::NoRoutes,
        }
    }

    /// Whether some route of `source` has a filter that reads the body: an
    /// event of it too large for a queue message is then routed with its
    /// body read back from D1 (`crate::ingest::claimed_bodies`).
    pub fn routes_read_body(&self, source: &str) -> bool {
        self.routes
            .iter()
            .find(|(s, _)| s == source)
            .is_some_and(|(_, routes)| {
                routes
                    .iter()
                    .any(|r| r.filter.as_ref().is_some_and(Filter::reads_body))
            })
    }

    /// Reads the delivery settings for the declared sources.
    pub fn load(env: &impl ConfigEnv, specs: &[SourceSpec]) -> Result<DeliveryConfig, ConfigError> {
        // Inserted one by one: `collect` into a map sorts first, and that
        // sort is a few KB of wasm for this one type.
        let mut downstreams = BTreeMap::new();
        for s in specs {
            if let Some(d) = &s.downstream {
                downstreams.insert(s.name.clone(), d.clone());
            }
        }
        let timeout_ms = parse_bounded(
            env,
            "DELIVERY_TIMEOUT_MS",
            DEFAULT_DELIVERY_TIMEOUT_MS,
            DELIVERY_TIMEOUT_RANGE_MS,
        )?;
        let (mut destinations, routes) = routes_of(env, specs, timeout_ms as u32)?;
        let keys = load_keys(env, &destinations)?;
        for (d, keys) in destinations.iter_mut().zip(keys) {
            d.keys = keys;
        }
        let signing_key = text(env, "DOWNSTREAM_SIGNING_SECRET")
            .and_then(|s| SigningKey::from_secret(KeyForm::Raw, &s).ok());
        // The shared key signs every routed destination without a key of
        // its own.
        let unsigned = routes.iter().any(|(_, rs)| {
            rs.iter().any(|r| {
                destinations
                    .iter()
                    .any(|d| d.name == r.to && d.keys.signing.is_none() && d.signs())
            })
        });
        if signing_key.is_none() && unsigned {
            let names: Vec<&str> = routes.iter().map(|(s, _)| s.as_str()).collect();
            return Err(ConfigError::new(
                "DOWNSTREAM_SIGNING_SECRET",
                format!("is not set, but source(s) {} forward to a downstream or route to destinations; set it with `wrangler secret put DOWNSTREAM_SIGNING_SECRET`", names.join(", ")),
            ));
        }
        let breaker_open_action = open_action(env)?;
        Ok(DeliveryConfig {
            downstreams,
            destinations,
            routes,
            signing_key,
            timeout_ms,
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
            message_overdue_ms: super::overdue::load(env)?,
            first_attempt_budget_ms: super::call_scheduler::load_budget(env)?,
        })
    }
}

/// `BREAKER_OPEN_ACTION`: `park` (default), `retry` or `dead-letter`.
fn open_action(env: &impl ConfigEnv) -> Result<BreakerOpenAction, ConfigError> {
    match text(env, "BREAKER_OPEN_ACTION") {
        None => Ok(BreakerOpenAction::default()),
        Some(raw) => BreakerOpenAction::parse(&raw).ok_or_else(|| {
            ConfigError::new(
                "BREAKER_OPEN_ACTION",
                "must be `park`, `retry` or `dead-letter`",
            )
        }),
    }
}

/// The destinations (declared, and one per `downstream`) and each source's
/// routes, refusing the conflicts of DESIGN §3: a declared destination
/// named like a source that uses `downstream`, and a route to no
/// destination. (A route listed twice and `routes` beside `downstream`
/// are refused with the source, `super::sources`.)
fn routes_of(
    env: &impl ConfigEnv,
    specs: &[SourceSpec],
    default_timeout_ms: u32,
) -> Result<(Vec<Destination>, Vec<SourceRoutes>), ConfigError> {
    let mut destinations = load_destinations(env, default_timeout_ms)?;
    for spec in specs {
        let Some(url) = &spec.downstream else {
            continue;
        };
        let at = destinations.partition_point(|d| d.name < spec.name);
        if destinations.get(at).is_some_and(|d| d.name == spec.name) {
            return Err(ConfigError::new(
                format!("DESTINATIONS.{}", spec.name),
                format!("is named like source '{0}', whose downstream is the destination '{0}'; rename this destination, or give source '{0}' routes instead of downstream", spec.name),
            ));
        }
        destinations.insert(at, Destination::url(&spec.name, url, default_timeout_ms));
    }
    let mut routes = Vec::new();
    for spec in specs {
        if spec.downstream.is_some() {
            let to = spec.name.clone();
            routes.push((to.clone(), vec![Route { to, filter: None }]));
            continue;
        }
        for (i, route) in spec.routes.iter().enumerate() {
            if !destinations.iter().any(|d| d.name == route.to) {
                let known: Vec<&str> = destinations.iter().map(|d| d.name.as_str()).collect();
                let known = if known.is_empty() {
                    "none".to_string()
                } else {
                    known.join(", ")
                };
                return Err(ConfigError::new(
                    format!("SOURCES.{}.routes[{i}].to", spec.name),
                    format!(
                        "names no destination '{}'; declare it in DESTINATIONS (declared: {known})",
                        route.to
                    ),
                ));
            }
        }
        if !spec.routes.is_empty() {
            routes.push((spec.name.clone(), spec.routes.clone()));
        }
    }
    Ok((destinations, routes))
}
