//! A source's `routes` (DESIGN §3): each `{"to", "filter"?}` as declared,
//! and which routes one event takes. Whether each `to` names a destination
//! is checked where `DESTINATIONS` is known (`super::delivery`).

use crate::route::filter::{body_value, headers_value, parse_filter, Filter};
use crate::state::DeliverySummary;
use crate::support::env::{fail, FieldError};
use serde_json::Value;

/// One route of a source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    /// The destination's name.
    pub to: String,
    /// Which events take it; `None` takes every event.
    pub filter: Option<Filter>,
}

/// Which routes an event takes (destination names, in route order).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Routed {
    /// The source has no routes (neither `routes` nor `downstream`).
    NoRoutes,
    /// The routes whose filters matched, and the others; an empty
    /// `matched` is a filtered event.
    Routed {
        /// Destinations that get a delivery.
        matched: Vec<String>,
        /// Destinations whose filter refused the event.
        unmatched: Vec<String>,
    },
}

/// Evaluates `routes` for one event: the body and headers are read once,
/// and only when some filter reads them. Pure.
pub fn evaluate(
    routes: &[Route],
    headers: &[(String, String)],
    body: &[u8],
    content_type: Option<&str>,
) -> Routed {
    if routes.is_empty() {
        return Routed::NoRoutes;
    }
    let filters = || routes.iter().filter_map(|r| r.filter.as_ref());
    let body = if filters().any(Filter::reads_body) {
        body_value(body, content_type)
    } else {
        None
    };
    let headers = if filters().any(Filter::reads_headers) {
        headers_value(headers)
    } else {
        Value::Null
    };
    let (mut matched, mut unmatched) = (Vec::new(), Vec::new());
    for route in routes {
        let takes = route
            .filter
            .as_ref()
            .is_none_or(|f| f.matches(&headers, body.as_ref()));
        if takes { &mut matched } else { &mut unmatched }.push(route.to.clone());
    }
    Routed::Routed { matched, unmatched }
}

/// Parses a source's `routes` list; errors name the field from the source
/// on (`.routes[1].filter.body.total.$gte`).
pub(crate) fn parse_routes(raw: &Value) -> Result<Vec<Route>, FieldError> {
    let Value::Array(items) = raw else {
        return fail(
            ".routes",
            "must be a list of routes such as [{\"to\": \"billing\"}]",
        );
    };
    let mut routes: Vec<Route> = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let at = format!(".routes[{i}]");
        let route = route(item, &at)?;
        if let Some(first) = routes.iter().position(|r| r.to == route.to) {
            return fail(
                &format!("{at}.to"),
                format!("routes to '{}' again (routes[{first}] does already); a source has one route per destination, so join the two filters with $or", route.to),
            );
        }
        routes.push(route);
    }
    Ok(routes)
}

fn route(item: &Value, at: &str) -> Result<Route, FieldError> {
    let Value::Object(fields) = item else {
        return fail(
            at,
            "must be an object such as {\"to\": \"billing\", \"filter\": {…}}",
        );
    };
    if let Some(key) = fields.keys().find(|k| *k != "to" && *k != "filter") {
        return fail(&format!("{at}.{key}"), "unknown field; expected to, filter");
    }
    let to = match fields.get("to") {
        Some(Value::String(to)) if !to.is_empty() => to.clone(),
        _ => return fail(&format!("{at}.to"), "is required: a destination's name"),
    };
    let filter = match fields.get("filter") {
        None | Some(Value::Null) => None,
        Some(raw) => {
            Some(parse_filter(raw).map_err(|e| (format!("{at}.filter{}", e.path), e.problem))?)
        }
    };
    Ok(Route { to, filter })
}

// The status an event starts with is the routing's outcome, so the rule
// lives here, beside `Routed`, not in the vocabulary under `state/`.
impl DeliverySummary {
    /// The status an event starts with once routed (DESIGN §3).
    pub fn routed(routed: &Routed) -> DeliverySummary {
        match routed {
            Routed::NoRoutes => DeliverySummary::None,
            Routed::Routed { matched, .. } if matched.is_empty() => DeliverySummary::Filtered,
            Routed::Routed { .. } => DeliverySummary::Pending,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::deliver::settings::DeliveryConfig;
    use crate::receive::sources::load_sources;
    use crate::support::env::ConfigError;
    use serde_json::json;
    use std::collections::BTreeMap;

    fn env(sources: Value, destinations: Option<Value>) -> BTreeMap<String, Value> {
        let mut env = BTreeMap::new();
        for name in sources.as_object().unwrap().keys() {
            env.insert(crate::receive::sources::secret_name(name), json!("s"));
        }
        env.insert("SOURCES".into(), sources);
        env.insert("DOWNSTREAM_SIGNING_SECRET".into(), json!("down"));
        if let Some(d) = destinations {
            env.insert("DESTINATIONS".into(), d);
        }
        env
    }

    fn load(sources: Value, destinations: Option<Value>) -> Result<DeliveryConfig, ConfigError> {
        let env = env(sources, destinations);
        DeliveryConfig::load(&env, &load_sources(&env)?)
    }

    type Headers = [(String, String)];

    fn two() -> Value {
        json!({"billing": {"url": "https://billing.example/h", "timeout_ms": 2000}, "analytics": {"url": "https://analytics.example/h"}})
    }

    fn routed(matched: &[&str], unmatched: &[&str]) -> Routed {
        let names = |n: &[&str]| n.iter().map(|s| s.to_string()).collect();
        Routed::Routed {
            matched: names(matched),
            unmatched: names(unmatched),
        }
    }

    #[test]
    fn a_downstream_is_one_unfiltered_route_to_a_url_destination_named_after_its_source() {
        let d = load(
            json!({"shop": {"scheme": "github", "downstream": "https://shop.example/in"}, "quiet": {"scheme": "github"}}),
            None,
        )
        .unwrap();
        assert_eq!(d.destination_names().collect::<Vec<_>>(), ["shop"]);
        let shop = d.destination("shop").unwrap();
        assert_eq!(
            (&shop.target, shop.rate_per_s, shop.timeout_ms),
            (
                &crate::deliver::destinations::Target::Url("https://shop.example/in".into()),
                None,
                10_000
            )
        );
        assert!(
            d.forwards("shop") && !d.forwards("quiet"),
            "today's accessor"
        );
        assert_eq!(d.downstreams["shop"], "https://shop.example/in");
        assert_eq!(d.route("shop", &[], b"{}", None), routed(&["shop"], &[]));
        assert_eq!(d.route("quiet", &[], b"{}", None), Routed::NoRoutes);
        assert_eq!(d.route("nobody", &[], b"{}", None), Routed::NoRoutes);
    }

    #[test]
    fn routes_send_an_event_to_every_destination_whose_filter_matches_in_route_order() {
        let sources = json!({"shop": {"scheme": "github", "routes": [
            {"to": "billing", "filter": {"body": {"type": {"$startsWith": "invoice."}}}},
            {"to": "analytics"},
            {"to": "legacy", "filter": {"headers": {"X-Env": "prod"}, "body": {"total": {"$gte": 100}}}}
        ]}, "other": {"scheme": "github", "downstream": "https://other.example/in"}, "late": {"scheme": "github", "routes": []}});
        let mut dests = two();
        dests["legacy"] = json!({"url": "https://legacy.example/h", "rate_per_s": 0.5});
        let d = load(sources, Some(json!(dests.to_string()))).unwrap();
        assert_eq!(
            d.destination_names().collect::<Vec<_>>(),
            ["analytics", "billing", "legacy", "other"]
        );
        assert_eq!(d.destination("billing").unwrap().timeout_ms, 2000);
        assert_eq!(d.destination("legacy").unwrap().rate_per_s, Some(0.5));
        assert!(
            d.forwards("shop"),
            "a source with routes forwards, as a downstream source does"
        );
        let prod = [("x-env".to_string(), "prod".to_string())];
        let table: [(&Headers, &str, Routed); 4] = [
            (
                &prod,
                r#"{"type":"invoice.paid","total":150}"#,
                routed(&["billing", "analytics", "legacy"], &[]),
            ),
            (
                &[],
                r#"{"type":"invoice.paid","total":150}"#,
                routed(&["billing", "analytics"], &["legacy"]),
            ),
            (
                &prod,
                r#"{"type":"order.paid","total":99}"#,
                routed(&["analytics"], &["billing", "legacy"]),
            ),
            (
                &prod,
                "not json",
                routed(&["analytics"], &["billing", "legacy"]),
            ),
        ];
        for (headers, body, want) in table {
            assert_eq!(
                d.route("shop", headers, body.as_bytes(), Some("application/json")),
                want,
                "{body}"
            );
        }
        assert_eq!(
            d.route("late", &[], b"{}", None),
            Routed::NoRoutes,
            "an empty list is no routes"
        );
    }

    #[test]
    fn an_event_that_no_filter_matches_is_routed_with_nothing_matched() {
        let d = load(
            json!({"shop": {"scheme": "slack", "routes": [{"to": "billing", "filter": {"body": {"command": "/bill"}}}]}}),
            Some(two()),
        )
        .unwrap();
        let form = Some("application/x-www-form-urlencoded");
        assert_eq!(
            d.route("shop", &[], b"command=%2Fdeploy", form),
            routed(&[], &["billing"])
        );
        assert_eq!(
            d.route("shop", &[], b"command=%2Fbill", form),
            routed(&["billing"], &[])
        );
    }

    #[test]
    fn the_conflicts_of_routes_and_destinations_name_their_path() {
        let table = [
            (
                json!({"shop": {"scheme": "github", "routes": [{"to": "billing"}, {"to": "crm"}]}}),
                "SOURCES.shop.routes[1].to",
                "names no destination 'crm'",
            ),
            (
                json!({"shop": {"scheme": "github", "routes": [{"to": "billing"}, {"to": "analytics"}, {"to": "billing"}]}}),
                "SOURCES.shop.routes[2].to",
                "again (routes[0]",
            ),
            (
                json!({"shop": {"scheme": "github", "downstream": "https://x.example/h", "routes": [{"to": "billing"}]}}),
                "SOURCES.shop.downstream",
                "cannot be given beside routes",
            ),
            (
                json!({"billing": {"scheme": "github", "downstream": "https://x.example/h"}}),
                "DESTINATIONS.billing",
                "is named like source 'billing'",
            ),
            (
                json!({"shop": {"scheme": "github", "routes": [{"to": "billing"}, {"to": "analytics", "filter": {"body": {"total": {"$gte": true}}}}]}}),
                "SOURCES.shop.routes[1].filter.body.total.$gte",
                "a number or a string",
            ),
            (
                json!({"shop": {"scheme": "github", "routes": [{"to": "billing", "filter": {"body": {"t": {"$regex": "x"}}}}]}}),
                "SOURCES.shop.routes[0].filter.body.t.$regex",
                "unknown operator",
            ),
            (
                json!({"shop": {"scheme": "github", "routes": [{"to": "billing", "filter": {}}]}}),
                "SOURCES.shop.routes[0].filter",
                "is empty",
            ),
        ];
        for (sources, key, fragment) in table {
            let err = load(sources.clone(), Some(two())).unwrap_err();
            assert_eq!(err.key, key, "{sources}: {err}");
            assert!(err.problem.contains(fragment), "{sources}: {err}");
        }
        let err = load(
            json!({"shop": {"scheme": "github", "routes": [{"to": "x"}]}}),
            None,
        )
        .unwrap_err();
        assert!(err.problem.contains("(declared: none)"), "{err}");
    }

    #[test]
    fn a_route_of_a_bad_shape_names_its_path() {
        let table = [
            (
                json!({"shop": {"scheme": "github", "routes": [{"to": "billing", "filters": {}}]}}),
                "SOURCES.shop.routes[0].filters",
                "unknown field",
            ),
            (
                json!({"shop": {"scheme": "github", "routes": [{"filter": {"body": {"a": 1}}}]}}),
                "SOURCES.shop.routes[0].to",
                "is required",
            ),
            (
                json!({"shop": {"scheme": "github", "routes": ["billing"]}}),
                "SOURCES.shop.routes[0]",
                "must be an object",
            ),
            (
                json!({"shop": {"scheme": "github", "routes": {"to": "billing"}}}),
                "SOURCES.shop.routes",
                "must be a list",
            ),
        ];
        for (sources, key, fragment) in table {
            let err = load(sources.clone(), Some(two())).unwrap_err();
            assert_eq!(err.key, key, "{sources}: {err}");
            assert!(err.problem.contains(fragment), "{sources}: {err}");
        }
    }

    #[test]
    fn a_route_to_a_destination_needs_the_signing_secret() {
        let mut e = env(
            json!({"shop": {"scheme": "github", "routes": [{"to": "billing"}]}}),
            Some(two()),
        );
        e.remove("DOWNSTREAM_SIGNING_SECRET");
        let err = DeliveryConfig::load(&e, &load_sources(&e).unwrap()).unwrap_err();
        assert_eq!(err.key, "DOWNSTREAM_SIGNING_SECRET");
        assert!(err.problem.contains("shop"), "{err}");
        e.insert("SOURCES".into(), json!({"shop": {"scheme": "github"}}));
        assert!(
            DeliveryConfig::load(&e, &load_sources(&e).unwrap()).is_ok(),
            "declared destinations alone need no key"
        );
    }
}
