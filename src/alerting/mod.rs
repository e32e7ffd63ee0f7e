//! The relay's side of the alarms (DESIGN §5): sending a signed alert, the
//! `dlq_cannot_store` alarm whose state lives in R2, and the internal
//! routes the DLQ worker calls for them. The watchdog that evaluates the
//! other kinds is `crate::maintenance::watchdog`.

pub mod alert_post;
pub mod cannot_store_object;
pub mod internal_alarm_routes;
