//! The build's checks, table by table, on a deployment shaped like the
//! committed configs: it passes as given, and each mistake is refused with
//! a message naming the file and the key.

use super::*;
use serde_json::json;

fn relay() -> Value {
    json!({
        "name": "hookrelay",
        "d1_databases": [{"binding": "DB", "database_name": "hookrelay", "database_id": "id-1"}],
        "r2_buckets": [{"binding": "ARCHIVE", "bucket_name": "hookrelay-archive"}],
        "queues": {
            "producers": [
                {"binding": "WEBHOOKS", "queue": "webhooks"},
                {"binding": "WEBHOOKS_DLQ", "queue": "webhooks-dlq"},
                {"binding": "DELIVERIES", "queue": "deliveries"},
                {"binding": "CONTROL", "queue": "hookrelay-control"}
            ],
            "consumers": [
                {"queue": "webhooks", "max_batch_size": 50, "max_batch_timeout": 2, "max_retries": 5, "dead_letter_queue": "webhooks-dlq"},
                {"queue": "deliveries", "max_batch_size": 50, "max_batch_timeout": 2, "max_retries": 5, "dead_letter_queue": "webhooks-dlq"},
                {"queue": "hookrelay-control", "max_batch_size": 2, "max_batch_timeout": 0, "max_retries": 100}
            ]
        },
        "services": [{"binding": "DLQ", "service": "hookrelay-dlq"}],
        "ratelimits": [{"name": "SIGNATURE_LIMITER", "namespace_id": "1001", "simple": {"limit": 10, "period": 60}}],
        "vars": {"DLQ_CAPACITY": "10000", "QUEUE_WEBHOOKS": "webhooks", "SOURCES": {}}
    })
}

fn dlq() -> Value {
    json!({
        "name": "hookrelay-dlq",
        "workers_dev": false,
        "preview_urls": false,
        "d1_databases": [{"binding": "DB", "database_name": "hookrelay", "database_id": "id-1"}],
        "r2_buckets": [{"binding": "ARCHIVE", "bucket_name": "hookrelay-archive"}],
        "queues": {
            "producers": [{"binding": "JOBS", "queue": "hookrelay-jobs"}],
            "consumers": [
                {"queue": "webhooks-dlq", "max_batch_size": 100, "max_batch_timeout": 5, "max_retries": 100},
                {"queue": "hookrelay-jobs", "max_batch_size": 1, "max_batch_timeout": 0, "max_retries": 100}
            ]
        },
        "services": [{"binding": "RELAY", "service": "hookrelay"}],
        "vars": {"DLQ_CAPACITY": "10000"}
    })
}

fn demo() -> BTreeMap<String, Value> {
    parse_dev_vars(
        "# the demo\nSOURCES='{\"demo-hmac\":{\"scheme\":\"hmac-sha256\"}}'\nWEBHOOK_SECRET_DEMO_HMAC=\"local\"\nBLANK=\n",
    )
}

fn check(relay: &Value, dlq: &Value, demo: Option<&BTreeMap<String, Value>>) -> Result<(), String> {
    check_deployment(&Deployment {
        relay: ConfigFile {
            label: "wrangler.toml",
            table: relay,
        },
        dlq: ConfigFile {
            label: "dlq/wrangler.toml",
            table: dlq,
        },
        demo_vars: demo,
    })
}

/// Sets `pointer` (a JSON Pointer) in `v` to `to`, adding its last key to
/// an object that lacks it.
fn with(mut v: Value, pointer: &str, to: Value) -> Value {
    let (parent, key) = pointer.rsplit_once('/').expect("a pointer");
    let slot = v.pointer_mut(parent).unwrap_or_else(|| panic!("{pointer}"));
    match slot {
        Value::Object(map) => {
            map.insert(key.to_string(), to);
        }
        Value::Array(items) => items[key.parse::<usize>().expect("an index")] = to,
        _ => panic!("{pointer}"),
    }
    v
}

#[test]
fn the_committed_shape_passes_with_and_without_its_demo() {
    assert_eq!(check(&relay(), &dlq(), Some(&demo())), Ok(()));
    assert_eq!(check(&relay(), &dlq(), None), Ok(()));
    let vars = demo();
    assert_eq!(vars["BLANK"], json!(""));
    assert_eq!(vars["WEBHOOK_SECRET_DEMO_HMAC"], json!("local"));
}

#[test]
fn each_mistake_is_refused_naming_the_file_and_the_key() {
    let acme = json!({"acme": {"scheme": {"hmac": "sha256", "header": "X-Sig", "encoding": "hex2", "signed": "{body}"}}});
    // (in the relay's file?, where, the mistake, what the error names)
    let table = [
        (true, "/vars/SOURCES", acme, "SOURCES.acme.scheme.encoding"),
        (
            true,
            "/queues/consumers/0/max_retries",
            json!(3),
            "must set max_retries = 5",
        ),
        (
            true,
            "/queues/producers/0/queue",
            json!("other"),
            "the producer WEBHOOKS must send to",
        ),
        (
            false,
            "/workers_dev",
            json!(true),
            "dlq/wrangler.toml must set workers_dev = false",
        ),
        (
            false,
            "/d1_databases/0/database_id",
            json!("id-2"),
            "same d1_databases entry",
        ),
        (false, "/vars/DLQ_CAPACITY", json!("5"), "DLQ_CAPACITY"),
        (
            false,
            "/vars/RETRY_DELAYS_S",
            json!("1"),
            "declares RETRY_DELAYS_S, but only the relay",
        ),
        (false, "/services/0/service", json!("x"), "must bind RELAY"),
        (
            true,
            "/ratelimits/0/simple/period",
            json!(10),
            "SIGNATURE_LIMITER must set simple",
        ),
        (
            true,
            "/vars/DESTINATIONS",
            json!({"q": {"queue": "MINE"}}),
            "DESTINATIONS.q.queue",
        ),
    ];
    for (in_relay, pointer, mistake, wanted) in table {
        let (r, d) = match in_relay {
            true => (with(relay(), pointer, mistake), dlq()),
            false => (relay(), with(dlq(), pointer, mistake)),
        };
        let err = check(&r, &d, None).unwrap_err();
        assert!(err.contains(wanted), "{wanted}: {err}");
    }
}

#[test]
fn an_environment_must_exist_in_both_and_repeat_the_top_level_vars() {
    let staging_relay = with(
        relay(),
        "/vars",
        json!({"DLQ_CAPACITY": "10000", "QUEUE_WEBHOOKS": "webhooks", "SOURCES": {}}),
    );
    let mut r = staging_relay.clone();
    r["env"] = json!({"staging": relay()});
    let err = check(&r, &dlq(), None).unwrap_err();
    assert!(err.contains("declares the environments"), "{err}");
    let mut d = dlq();
    d["env"] = json!({"staging": dlq()});
    assert_eq!(check(&r, &d, None), Ok(()));
    r["env"]["staging"]["vars"] = json!({"DLQ_CAPACITY": "10000", "SOURCES": {}});
    let err = check(&r, &d, None).unwrap_err();
    assert!(
        err.contains("wrangler.toml [env.staging] [vars] does not declare QUEUE_WEBHOOKS"),
        "{err}"
    );
    assert_eq!(
        env_vars(&r, Some("staging")).unwrap()["DLQ_CAPACITY"],
        json!("10000")
    );
    assert!(env_vars(&r, Some("prod"))
        .unwrap_err()
        .contains("[env.prod]"));
}

#[test]
fn a_demo_without_sources_or_with_a_bad_one_is_refused() {
    let empty = parse_dev_vars("WEBHOOK_SECRET_X=1\n");
    let err = check(&relay(), &dlq(), Some(&empty)).unwrap_err();
    assert!(err.contains("declares no demo SOURCES"), "{err}");
    let unsigned = parse_dev_vars("SOURCES='{\"demo-hmac\":{\"scheme\":\"hmac-sha256\"}}'\n");
    let err = check(&relay(), &dlq(), Some(&unsigned)).unwrap_err();
    assert!(err.contains("WEBHOOK_SECRET_DEMO_HMAC"), "{err}");
}

#[test]
fn migrations_are_numbered_without_gaps() {
    let names = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert_eq!(
        check_migrations(&names(&["0002_b.sql", "README.md", "0001_a.sql"])),
        Ok(())
    );
    for (list, wanted) in [
        (&["0001_a.sql", "0003_c.sql"][..], "0003_c.sql"),
        (&["0001_A.sql"][..], "0001_A.sql"),
        (&["README.md"][..], "empty"),
    ] {
        let err = check_migrations(&names(list)).unwrap_err();
        assert!(err.contains(wanted), "{wanted}: {err}");
    }
}

#[test]
fn a_destination_on_the_relays_own_queue_or_worker_is_refused_whatever_its_binding_is_called() {
    let alias = |kind: &str, binding: &str, target: &str| {
        let (table, field) = match kind {
            "queue" => ("/queues/producers", "queue"),
            _ => ("/services", "service"),
        };
        let mut r = relay();
        r.pointer_mut(table)
            .and_then(Value::as_array_mut)
            .expect("the bindings")
            .push(json!({"binding": binding, field: target}));
        let dests = json!({"loop": {kind: binding}}).to_string();
        with(r, "/vars/DESTINATIONS", json!(dests))
    };
    // (kind, the user's binding, what it points at, refused?)
    let table = [
        ("queue", "ALIAS", "webhooks", true),
        ("queue", "ALIAS", "webhooks-dlq", true),
        ("queue", "ALIAS", "hookrelay-control", true),
        ("service", "SELF", "hookrelay", true),
        ("service", "DLQ_AGAIN", "hookrelay-dlq", true),
        ("queue", "ORDERS", "orders", false),
        ("service", "BILLING", "billing-worker", false),
    ];
    for (kind, binding, target, refused) in table {
        let got = check(&alias(kind, binding, target), &dlq(), None);
        if refused {
            let err = got.expect_err(target);
            assert!(
                err.contains(&format!("DESTINATIONS.loop.{kind}")),
                "{target}: {err}"
            );
        } else {
            assert_eq!(got, Ok(()), "{target}");
        }
    }
}
