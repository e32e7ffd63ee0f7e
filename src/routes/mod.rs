//! The `fetch` trigger's routes: `POST /webhooks/{source}` (verify, then
//! enqueue), `GET /healthz`, the admin API and console passed to the DLQ
//! worker, the pull API of pull destinations (`pull.rs`), and the internal routes the DLQ worker calls (replay,
//! maintenance, the pull destinations' figures for its stats). The dispatch by path is `fetch_entry.rs`.

pub(crate) mod admin_proxy;
pub(crate) mod health;
pub(crate) mod ingest;
pub(crate) mod internal_auth;
pub(crate) mod internal_maintenance;
pub(crate) mod internal_pull_figures;
pub(crate) mod internal_replay;
pub(crate) mod pull;
pub(crate) mod responses;
pub(crate) mod signature_failures;
pub(crate) mod signature_limit;
pub(crate) mod test_fault;
