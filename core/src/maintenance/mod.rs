//! Stage 13, maintenance (the relay's cron): which duties a cron invocation
//! carries, and the leases that keep one sweep step and one watchdog run at
//! a time. What the sweep archives is `retention/`; the watchdog's decisions
//! are `alarms/`.

pub mod lease;
pub mod schedule;
