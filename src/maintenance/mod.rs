//! Maintenance the relay runs on its `*/5` cron (DESIGN §5): the alarm
//! watchdog. (The retention sweep and `POST /internal/v1/maintenance` join
//! it from their own branch.)

pub mod watchdog;
