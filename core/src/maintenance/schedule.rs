//! Which duties a cron invocation of the relay carries. The relay has two
//! cron triggers: the drain's safety net every minute, and the retention
//! sweep with the alarm watchdog every five minutes (DESIGN §5), told apart
//! by the expression the platform passes in.

/// The relay's internal route that runs maintenance now, for the DLQ
/// worker's `POST /api/v1/admin/maintenance/run` (through `RELAY`).
pub const MAINTENANCE_PATH: &str = "/internal/v1/maintenance";

/// The cron expression of the sweep and watchdog in `wrangler.toml`.
pub const MAINTENANCE_CRON: &str = "*/5 * * * *";
/// The cron expression of the drain's safety net in `wrangler.toml`.
pub const DRAIN_SAFETY_NET_CRON: &str = "*/1 * * * *";

/// What one scheduled invocation does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CronDuties {
    /// Resend lost drain chains and resume unfinished work.
    pub drain_safety_net: bool,
    /// Run a sweep step and the watchdog.
    pub maintenance: bool,
}

/// The duties for `cron`. An empty or unknown expression (a bare
/// `/__scheduled` under `wrangler dev --test-scheduled`, or a trigger added
/// later) runs both, so a local test of the cron reaches everything and
/// nothing is silently skipped.
pub fn cron_duties(cron: &str) -> CronDuties {
    match cron.trim() {
        MAINTENANCE_CRON => CronDuties {
            drain_safety_net: false,
            maintenance: true,
        },
        DRAIN_SAFETY_NET_CRON => CronDuties {
            drain_safety_net: true,
            maintenance: false,
        },
        _ => CronDuties {
            drain_safety_net: true,
            maintenance: true,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_trigger_runs_its_duty_and_an_unnamed_one_runs_both() {
        let table = [
            ("*/5 * * * *", false, true),
            ("*/1 * * * *", true, false),
            ("", true, true),
            ("0 * * * *", true, true),
        ];
        for (cron, drain, maintenance) in table {
            assert_eq!(
                cron_duties(cron),
                CronDuties {
                    drain_safety_net: drain,
                    maintenance
                },
                "{cron:?}"
            );
        }
    }
}
