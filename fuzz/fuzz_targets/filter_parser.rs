//! The route filter parser on any JSON: it answers a filter or an error
//! naming a path inside the filter, never panics; the same filter inside
//! `SOURCES` is refused under `SOURCES.s.routes[0].filter` plus that path,
//! and an accepted filter stays accepted under `$not`, `$and` and `$or`.
#![no_main]

use hookrelay_core::receive::parse_sources;
use hookrelay_core::route::filter::parse_filter;
use libfuzzer_sys::fuzz_target;
use serde_json::{json, Value};

fuzz_target!(|data: &[u8]| {
    // `"filter": null` is no filter in SOURCES, so it is not compared.
    let Ok(raw) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    if raw.is_null() {
        return;
    }
    let parsed = parse_filter(&raw);
    let sources = json!({"s": {"scheme": "github", "routes": [{"to": "d", "filter": raw}]}});
    let config = parse_sources(&sources);
    match &parsed {
        Err(e) => {
            assert!(!e.problem.is_empty());
            assert!(
                e.path.is_empty() || e.path.starts_with('.'),
                "a path inside the filter: {e:?}"
            );
            let err = config.expect_err("refused in SOURCES too");
            assert_eq!(err.key, format!("SOURCES.s.routes[0].filter{}", e.path));
            assert_eq!(err.problem, e.problem);
        }
        Ok(filter) => {
            let spec = config.expect("accepted in SOURCES too");
            assert_eq!(spec[0].routes[0].filter.as_ref(), Some(filter));
            let _ = format!("{filter:?}");
            // Wrapping a body pattern in one more level is refused only
            // for passing the depth limit.
            if let Some(body) = raw.get("body") {
                for wrapped in [
                    json!({"body": {"$not": body}}),
                    json!({"body": {"$and": [body]}}),
                    json!({"body": {"$or": [body, {"x": 1}]}}),
                ] {
                    if let Err(e) = parse_filter(&wrapped) {
                        assert!(e.problem.contains("deeper"), "{wrapped}: {e:?}");
                    }
                }
            }
        }
    }
});
