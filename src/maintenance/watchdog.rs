//! The alarm watchdog (DESIGN §5, "Alarms"), run after each sweep step.
// Replaced by the alarms branch at merge

use hookrelay_core::config::RelayConfig;
use worker::Env;

/// What one watchdog run changed: the ids of the alarms that fired and of
/// those that resolved.
pub struct AlarmsRun {
    /// Alarms whose condition started in this run.
    pub fired: Vec<String>,
    /// Alarms whose condition ended in this run.
    pub resolved: Vec<String>,
}

/// Runs the watchdog at `now_ms`.
pub async fn run(_env: &Env, _cfg: &RelayConfig, _now_ms: i64) -> worker::Result<AlarmsRun> {
    Ok(AlarmsRun {
        fired: Vec::new(),
        resolved: Vec::new(),
    })
}
