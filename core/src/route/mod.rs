//! Stage 4, route: which destinations an event goes to. A source's routes
//! are evaluated once, at ingest, against the whole event; each route's
//! filter is checked before any call (DESIGN §3).

pub mod filter;
pub mod routes;

pub use routes::{evaluate as evaluate_routes, Route, Routed};
