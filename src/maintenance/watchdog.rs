//! The alarm watchdog (DESIGN §5, Alarms), run by the `*/5` cron and
//! `maintenance/run` under its own lease (`super::lease`): read the
//! figures, let core decide which alarms fire and resolve
//! (`conditions::evaluate`, `machine::advance`), store the episodes, then
//! POST the alerts still owed, side by side, each within `ALERT_TIMEOUT`,
//! as many as the invocation's subrequest budget leaves. A failed POST
//! stays owed and is sent again on the next run; it never stops the run.
//! The `dlq_cannot_store` alarm is kept in R2
//! (`crate::alerting::cannot_store_object`): this run resolves it once D1
//! answers again.

mod figures;

use crate::alerting::{alert_post, cannot_store_object as cannot_store};
use hookrelay_core::alarms::alert_payload::Alert;
use hookrelay_core::alarms::cannot_store::Report;
use hookrelay_core::alarms::machine::{self, AlarmRecord, Owing, RunOutcome};
use hookrelay_core::alarms::{conditions, watchdog_budget, AlarmId};
use hookrelay_core::config::RelayConfig;
use hookrelay_core::metrics::{Component, Metric, MetricName};
use hookrelay_core::state::AlarmKind;
use hookrelay_core::support::subrequests::Budget;
use hookrelay_platform::db::{alarms, batch, error_message};
use hookrelay_platform::join::join_all;
use hookrelay_platform::{log, metrics};
use worker::{D1Database, Env};

/// What one watchdog run changed: the alarm ids (`{kind}:{subject}`) that
/// started firing and those that resolved, for `maintenance/run`'s
/// `"alarms": {"fired", "resolved"}`.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct AlarmsRun {
    /// Alarms that started firing in this run.
    pub fired: Vec<String>,
    /// Alarms that resolved in this run.
    pub resolved: Vec<String>,
}

/// Runs the watchdog once at `now_ms` (the caller holds its lease), each
/// call counted in `budget`. The D1 alarms and the R2 cannot-store alarm
/// are each tried whatever the other did; the first error is answered
/// after both ran.
pub async fn run(
    env: &Env,
    cfg: &RelayConfig,
    now_ms: i64,
    budget: &mut Budget,
) -> worker::Result<AlarmsRun> {
    let mut out = AlarmsRun::default();
    let d1 = match env.d1("DB") {
        Ok(db) => d1_alarms(&db, cfg, now_ms, budget, &mut out).await,
        Err(e) => Err(e),
    };
    let store_ok = d1.is_ok();
    let report = Report::Watch { store_ok };
    let cannot = cannot_store::apply(env, cfg, &report, now_ms, budget).await;
    match &cannot {
        Ok(applied) => {
            let id = AlarmId::new(AlarmKind::DlqCannotStore, "dlq").to_string();
            if applied.fired {
                count(MetricName::AlarmFired, AlarmKind::DlqCannotStore);
                out.fired.push(id.clone());
            }
            if applied.resolved {
                count(MetricName::AlarmResolved, AlarmKind::DlqCannotStore);
                out.resolved.push(id);
            }
        }
        Err(e) => log::error(
            Component::Watchdog,
            "cannot_store_watch_failed",
            log::fields! {"err": error_message(e)},
        ),
    }
    // Analytics Engine's write is no subrequest; the counters' D1 write,
    // when there is one, is one call (kept back by CALLS_AFTER_ALERTS).
    if let Some(totals) = metrics::flush_analytics(env) {
        if budget.spend(1).is_ok() {
            metrics::write_d1(env, &totals).await;
        }
    }
    d1?;
    cannot?;
    Ok(out)
}

/// The D1-kept alarms: evaluate, advance, store, then send what is owed.
async fn d1_alarms(
    db: &D1Database,
    cfg: &RelayConfig,
    now: i64,
    budget: &mut Budget,
    out: &mut AlarmsRun,
) -> worker::Result<()> {
    let owing = Owing::new(cfg.alarms.webhook_url.is_some(), &cfg.retention);
    budget.spend(1).map_err(super::over_budget)?;
    let (figures, firing, owed) = figures::read(db, cfg, &owing, now).await?;
    let active = conditions::evaluate(&figures, &cfg.alarms, now);
    let outcome = machine::advance(&firing, &active, now);
    // Stored before any POST: a fired alarm is recorded even if its
    // receiver hangs until the timeout.
    write(db, &outcome.changed, now, budget).await?;
    report(&outcome, out);
    let mut episodes = merged(firing, outcome.changed);
    episodes.extend(owed);
    let max = watchdog_budget::alerts_within(budget.left());
    let due = machine::due_alerts(&episodes, &owing, now, max);
    budget.spend(due.len() as u32).map_err(super::over_budget)?;
    // Side by side: a run waits for one ALERT_TIMEOUT at most, however
    // many alerts are owed.
    let posted = join_all(
        due.iter()
            .map(|rec| async move { alert_post::send(cfg, &Alert::from(*rec), now).await }),
    )
    .await;
    let sent: Vec<AlarmRecord> = due
        .iter()
        .zip(posted)
        .map(|(rec, posted)| machine::after_post(rec, now, posted.result))
        .collect();
    write(db, &sent, now, budget).await
}

/// The stored episodes with this run's changes in place of the old rows.
fn merged(stored: Vec<AlarmRecord>, changed: Vec<AlarmRecord>) -> Vec<AlarmRecord> {
    let mut all: Vec<AlarmRecord> = stored
        .into_iter()
        .filter(|s| !changed.iter().any(|c| c.id == s.id && c.since == s.since))
        .collect();
    all.extend(changed);
    all
}

async fn write(
    db: &D1Database,
    records: &[AlarmRecord],
    now: i64,
    budget: &mut Budget,
) -> worker::Result<()> {
    if records.is_empty() {
        return Ok(());
    }
    budget.spend(1).map_err(super::over_budget)?;
    let statements = records
        .iter()
        .map(|r| alarms::upsert(db, r, now))
        .collect::<worker::Result<Vec<_>>>()?;
    batch(db, statements).await?;
    Ok(())
}

fn report(outcome: &RunOutcome, out: &mut AlarmsRun) {
    for (ids, name, event) in [
        (&outcome.fired, MetricName::AlarmFired, "alarm_fired"),
        (
            &outcome.resolved,
            MetricName::AlarmResolved,
            "alarm_resolved",
        ),
    ] {
        for id in ids {
            count(name, id.kind);
            log::warn(
                Component::Watchdog,
                event,
                log::fields! {"alarm": id.to_string()},
            );
            let list = if name == MetricName::AlarmFired {
                &mut out.fired
            } else {
                &mut out.resolved
            };
            list.push(id.to_string());
        }
    }
}

fn count(name: MetricName, kind: AlarmKind) {
    metrics::count(
        Metric::new(name, Component::Watchdog).detail(kind.as_str()),
        1,
    );
}
