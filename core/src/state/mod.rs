//! Every state and outcome name that is stored in D1, sent in an answer or
//! counted, as a type. SQL binds `as_str()` and rows parse back with
//! `parse`, so renaming a state breaks the build at every use instead of
//! silently mismatching a string somewhere. The stable error codes and
//! their classes ([`error_code`]) are this vocabulary too.

mod alarm;
mod archive;
mod audit_action;
mod breaker_state_name;
mod delivery_state;
mod delivery_summary;
mod downstream_result;
mod entry_kind;
mod entry_status;
pub mod error_code;
mod event_step;
mod ingest_kind;
mod job_status;
mod replay_outcome;
mod store_outcome;

pub use alarm::{AlarmKind, AlarmState};
pub use archive::{ArchiveTable, SweepRule, TombstoneCause};
pub use audit_action::AuditAction;
pub use breaker_state_name::BreakerStateName;
pub use event_step::{delivery_step, EventStep, MAX_STEP_DETAIL_CHARS};
pub use job_status::{JobAction, JobCommand, JobEntryOutcome, JobEntryState, JobStatus};

pub use delivery_state::DeliveryState;
pub use delivery_summary::DeliverySummary;
pub use downstream_result::DownstreamResult;
pub use entry_kind::EntryKind;
pub use entry_status::EntryStatus;
pub use ingest_kind::IngestKind;
pub use replay_outcome::ReplayOutcome;
pub use store_outcome::StoreOutcome;

use std::fmt;

/// A stored name that no variant spells: a row written by a newer version,
/// or a corrupted one. It is an error, never a silent default.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownState {
    /// Which kind of state, e.g. `delivery status`.
    pub kind: &'static str,
    /// What the row held (truncated).
    pub value: String,
}

impl fmt::Display for UnknownState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown {} '{}' read from D1; was the row written by a newer hookrelay?",
            self.kind, self.value
        )
    }
}

impl std::error::Error for UnknownState {}

/// Declares a fieldless enum with one stored name per variant, plus
/// `as_str`, `parse`, `ALL`, `Display` and serde as that name.
macro_rules! named_states {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident ($kind:literal) {
            $( $(#[$vmeta:meta])* $variant:ident = $text:literal, )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        $vis enum $name {
            $( $(#[$vmeta])* $variant, )+
        }

        impl $name {
            /// Every variant, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The stored name.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $( $name::$variant => $text, )+
                }
            }

            /// Parses a stored name.
            pub fn parse(s: &str) -> Result<$name, $crate::state::UnknownState> {
                match s {
                    $( $text => Ok($name::$variant), )+
                    other => Err($crate::state::UnknownState {
                        kind: $kind,
                        value: other.chars().take(64).collect(),
                    }),
                }
            }

            /// The stored names, comma-separated, for error messages.
            pub fn names() -> String {
                Self::ALL.iter().map(|v| v.as_str()).collect::<Vec<_>>().join(", ")
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl ::serde::Serialize for $name {
            fn serialize<S: ::serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $name {
            fn deserialize<D: ::serde::Deserializer<'de>>(d: D) -> Result<$name, D::Error> {
                let s = <::std::borrow::Cow<'de, str> as ::serde::Deserialize>::deserialize(d)?;
                $name::parse(&s).map_err(::serde::de::Error::custom)
            }
        }
    };
}
pub(crate) use named_states;

#[cfg(test)]
mod tests {
    use super::*;

    fn roundtrips<T: Copy + PartialEq + std::fmt::Debug>(
        all: &[T],
        as_str: fn(T) -> &'static str,
        parse: fn(&str) -> Result<T, UnknownState>,
    ) {
        for &v in all {
            assert_eq!(parse(as_str(v)), Ok(v));
        }
        let names: std::collections::BTreeSet<_> = all.iter().map(|v| as_str(*v)).collect();
        assert_eq!(names.len(), all.len(), "two variants share a stored name");
    }

    #[test]
    fn every_state_roundtrips_through_its_stored_name() {
        roundtrips(
            DeliverySummary::ALL,
            DeliverySummary::as_str,
            DeliverySummary::parse,
        );
        roundtrips(EntryStatus::ALL, EntryStatus::as_str, EntryStatus::parse);
        roundtrips(
            ReplayOutcome::ALL,
            ReplayOutcome::as_str,
            ReplayOutcome::parse,
        );
        roundtrips(StoreOutcome::ALL, StoreOutcome::as_str, StoreOutcome::parse);
        roundtrips(AuditAction::ALL, AuditAction::as_str, AuditAction::parse);
        roundtrips(EventStep::ALL, EventStep::as_str, EventStep::parse);
        roundtrips(JobStatus::ALL, JobStatus::as_str, JobStatus::parse);
        roundtrips(JobAction::ALL, JobAction::as_str, JobAction::parse);
        roundtrips(JobCommand::ALL, JobCommand::as_str, JobCommand::parse);
        roundtrips(
            JobEntryOutcome::ALL,
            JobEntryOutcome::as_str,
            JobEntryOutcome::parse,
        );
        roundtrips(IngestKind::ALL, IngestKind::as_str, IngestKind::parse);
        roundtrips(
            BreakerStateName::ALL,
            BreakerStateName::as_str,
            BreakerStateName::parse,
        );
        roundtrips(
            DownstreamResult::ALL,
            DownstreamResult::as_str,
            DownstreamResult::parse,
        );
    }

    #[test]
    fn an_unknown_stored_name_is_an_error_naming_it() {
        let e = DeliverySummary::parse("teleported").unwrap_err();
        assert_eq!(e.kind, "delivery status");
        assert!(e.to_string().contains("teleported"));
        assert!(EntryStatus::parse("").is_err());
        assert!(serde_json::from_str::<EntryStatus>("\"gone\"").is_err());
        assert_eq!(
            serde_json::to_string(&EntryStatus::Pending).unwrap(),
            "\"pending\""
        );
    }
}
