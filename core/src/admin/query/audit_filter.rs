//! Which replay audit records `GET /audit` lists: for one dead-letter entry,
//! one job, or both.

use super::params::{refuse_unknown, set_once, shown};
use super::QueryError;

/// The query parameters the audit listing accepts; any other is refused.
pub const AUDIT_PARAMS: [&str; 4] = ["entry_id", "job_id", "limit", "cursor"];
/// The longest job id accepted, in bytes.
pub const MAX_JOB_ID_LEN: usize = 128;

/// Which audit records a list applies to. `None` matches all.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuditFilter {
    /// A dead-letter entry id, as `envelope::entry_id` mints it.
    pub entry_id: Option<String>,
    /// The job whose records to list.
    pub job_id: Option<String>,
}

/// Parses the audit filter from decoded query pairs: `entry_id` (`dlq_`
/// and 24 lowercase hex) and `job_id` (1-128 characters of a-z, A-Z, 0-9,
/// `-`, `_`, `.`, `:`). Empty values count as absent. A name outside
/// `AUDIT_PARAMS` is refused; `limit` and `cursor` are accepted here and
/// read by `parse_page`.
pub fn parse_audit_filter(params: &[(String, String)]) -> Result<AuditFilter, QueryError> {
    refuse_unknown(params, &AUDIT_PARAMS)?;
    let mut filter = AuditFilter::default();
    for (name, value) in params {
        if value.is_empty() {
            continue;
        }
        match name.as_str() {
            "entry_id" => set_once(&mut filter.entry_id, name, check_entry_id(name, value)?)?,
            "job_id" => set_once(&mut filter.job_id, name, check_job_id(name, value)?)?,
            _ => {}
        }
    }
    Ok(filter)
}

/// An entry id can only be what the DLQ consumer minted; anything else
/// could never match, so it is refused rather than answered with nothing.
fn check_entry_id(param: &str, value: &str) -> Result<String, QueryError> {
    super::params::check_minted_id(param, value, "dlq_", 24, "a dead-letter entry id")
}

fn check_job_id(param: &str, value: &str) -> Result<String, QueryError> {
    let ok = value.len() <= MAX_JOB_ID_LEN
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b':'));
    if ok {
        Ok(value.to_owned())
    } else {
        Err(QueryError::new(
            param,
            format!(
                "must be a job id of 1-{MAX_JOB_ID_LEN} characters of a-z, A-Z, 0-9, '-', '_', '.' or ':'; got {}",
                shown(value)
            ),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::super::pairs;
    use super::*;

    const ENTRY: &str = "dlq_0123456789abcdef01234567";

    #[test]
    fn the_audit_filter_reads_entry_and_job() {
        let job = "j".repeat(128);
        let table = [
            (vec![], AuditFilter::default()),
            (
                vec![("entry_id", ENTRY), ("job_id", "run_1796061600000_x")],
                AuditFilter {
                    entry_id: Some(ENTRY.into()),
                    job_id: Some("run_1796061600000_x".into()),
                },
            ),
            (
                vec![("entry_id", ""), ("job_id", "Job-1.a:b"), ("limit", "5")],
                AuditFilter {
                    job_id: Some("Job-1.a:b".into()),
                    ..AuditFilter::default()
                },
            ),
            (
                vec![("job_id", job.as_str()), ("cursor", "left to parse_page")],
                AuditFilter {
                    job_id: Some(job.clone()),
                    ..AuditFilter::default()
                },
            ),
        ];
        for (params, want) in table {
            assert_eq!(parse_audit_filter(&pairs(&params)), Ok(want), "{params:?}");
        }
    }

    #[test]
    fn a_bad_unknown_or_repeated_audit_param_is_refused_naming_it() {
        let long_job = "j".repeat(129);
        let accepts = "unknown query parameter; this route accepts entry_id, job_id, limit, cursor";
        let table = [
            (vec![("entry_id", "dlq_1")], "entry_id", "24 lowercase hex"),
            (
                vec![("entry_id", "dlq_0123456789ABCDEF01234567")],
                "entry_id",
                "24 lowercase hex",
            ),
            (
                vec![("entry_id", "0123456789abcdef01234567")],
                "entry_id",
                "dlq_",
            ),
            (vec![("job_id", long_job.as_str())], "job_id", "1-128"),
            (vec![("job_id", "a b")], "job_id", "1-128"),
            (vec![("job_id", "é")], "job_id", "1-128"),
            (
                vec![("entry_id", ENTRY), ("entry_id", ENTRY)],
                "entry_id",
                "more than once",
            ),
            (
                vec![("job_id", "a"), ("job_id", "b")],
                "job_id",
                "more than once",
            ),
            (vec![("entry", ENTRY)], "entry", accepts),
            (vec![("status", "pending")], "status", accepts),
            (vec![("run_id", "")], "run_id", accepts),
        ];
        for (params, param, mentions) in table {
            let err = parse_audit_filter(&pairs(&params)).unwrap_err();
            assert_eq!(err.param, param, "{params:?}");
            assert!(err.message.contains(mentions), "{}", err.message);
        }
    }
}
