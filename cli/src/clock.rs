//! The one place the CLI reads the clock: everything else takes `now` as
//! an argument, as the core does, so it can be tested at a fixed time.

/// Unix milliseconds now.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}
