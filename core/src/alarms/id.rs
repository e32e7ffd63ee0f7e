//! An alarm's id, `{kind}:{subject}`: one alarm per destination, per
//! source, or per store (`dlq`, `d1`).

use crate::state::{AlarmKind, UnknownState};
use std::fmt;

/// `{kind}:{subject}`: the identity of one alarm across runs.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct AlarmId {
    /// What it watches.
    pub kind: AlarmKind,
    /// Whom: a destination URL, a source name, `dlq` or `d1`.
    pub subject: String,
}

impl AlarmId {
    /// The alarm of `kind` about `subject`.
    pub fn new(kind: AlarmKind, subject: impl Into<String>) -> AlarmId {
        AlarmId {
            kind,
            subject: subject.into(),
        }
    }

    /// Parses a stored id. The kind is everything before the first `:`
    /// (kinds never hold one; subjects, such as URLs, may).
    pub fn parse(raw: &str) -> Result<AlarmId, UnknownState> {
        let (kind, subject) = raw.split_once(':').ok_or_else(|| UnknownState {
            kind: "alarm id",
            value: raw.chars().take(64).collect(),
        })?;
        Ok(AlarmId::new(AlarmKind::parse(kind)?, subject))
    }
}

impl fmt::Display for AlarmId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.kind.as_str(), self.subject)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_roundtrips_even_when_its_subject_holds_colons() {
        for id in [
            AlarmId::new(AlarmKind::BreakerOpen, "https://api.example:8443/hook"),
            AlarmId::new(AlarmKind::SourceSilent, "demo-stripe"),
            AlarmId::new(AlarmKind::DlqOldest, "dlq"),
        ] {
            assert_eq!(AlarmId::parse(&id.to_string()), Ok(id.clone()));
        }
        assert!(AlarmId::parse("no_colon").is_err());
        assert!(AlarmId::parse("made_up:x").is_err());
    }
}
