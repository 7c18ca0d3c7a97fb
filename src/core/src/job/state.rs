// SPDX-License-Identifier: GPL-3.0-or-later
//! The states a job goes through and the moves allowed between them.

use serde::{Deserialize, Serialize};

/// Where a job stands. The wire form is the lowercase name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum JobState {
    /// Received and checked; not started yet.
    Accepted,
    /// Its process runs.
    Running,
    /// Frozen because the owner took the machine back for a while.
    Paused,
    /// Exited with status 0.
    Succeeded,
    /// Exited otherwise, was killed for a limit, or could not start.
    Failed,
    /// Stopped at the submitter's request.
    Cancelled,
    /// Stopped because the owner paused the machine for longer than its grace (the
    /// submitter may retry elsewhere).
    Preempted,
    /// Its machine went away or restarted without a record of its end.
    Lost,
}

impl JobState {
    /// Every state, in lifecycle order.
    pub const ALL: [JobState; 8] = [
        JobState::Accepted,
        JobState::Running,
        JobState::Paused,
        JobState::Succeeded,
        JobState::Failed,
        JobState::Cancelled,
        JobState::Preempted,
        JobState::Lost,
    ];

    /// The wire name, as serde writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            JobState::Accepted => "accepted",
            JobState::Running => "running",
            JobState::Paused => "paused",
            JobState::Succeeded => "succeeded",
            JobState::Failed => "failed",
            JobState::Cancelled => "cancelled",
            JobState::Preempted => "preempted",
            JobState::Lost => "lost",
        }
    }

    /// The state of a wire name; `None` for anything else (a newer peer's state, say).
    pub fn from_wire(name: &str) -> Option<JobState> {
        JobState::ALL.into_iter().find(|state| state.as_str() == name)
    }

    /// Whether the job has ended for good: nothing moves out of these.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            JobState::Succeeded
                | JobState::Failed
                | JobState::Cancelled
                | JobState::Preempted
                | JobState::Lost
        )
    }

    /// Whether a job in `self` may move to `next`.
    ///
    /// An accepted job has not run, so it cannot have succeeded or been preempted while
    /// running; it can still fail to start, be cancelled or be lost with its machine.
    pub fn can_move_to(self, next: JobState) -> bool {
        use JobState::{Accepted, Cancelled, Failed, Lost, Paused, Running};
        match (self, next) {
            (Accepted, Running | Failed | Cancelled | Lost) => true,
            (Running, Paused) | (Paused, Running) => true,
            (Running | Paused, next) => next.is_terminal(),
            _ => false,
        }
    }
}

impl std::fmt::Display for JobState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One file a job produced, as collected from its directory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArtifactInfo {
    /// Its path relative to the job's directory (checked by
    /// [`validate_artifact_name`](super::artifacts::validate_artifact_name)).
    pub name: String,
    /// Bytes counted while reading it, not the size `stat` gave.
    pub size: u64,
    /// SHA-256 of its content, 64 lowercase hex.
    pub sha256: String,
}

#[cfg(test)]
mod tests {
    use super::JobState::{self, *};

    #[test]
    fn wire_names_round_trip_through_serde_and_from_wire() {
        for state in JobState::ALL {
            let json = serde_json::to_string(&state).unwrap();
            assert_eq!(json, format!("\"{}\"", state.as_str()));
            assert_eq!(serde_json::from_str::<JobState>(&json).unwrap(), state);
            assert_eq!(JobState::from_wire(state.as_str()), Some(state));
        }
        assert_eq!(JobState::from_wire("Running"), None);
        assert_eq!(JobState::from_wire(""), None);
    }

    #[test]
    fn transitions_follow_the_lifecycle() {
        assert!(Accepted.can_move_to(Running));
        assert!(Accepted.can_move_to(Cancelled));
        assert!(Accepted.can_move_to(Failed));
        assert!(Accepted.can_move_to(Lost));
        assert!(!Accepted.can_move_to(Succeeded));
        assert!(!Accepted.can_move_to(Paused));
        assert!(!Accepted.can_move_to(Preempted));
        assert!(Running.can_move_to(Paused) && Paused.can_move_to(Running));
        for end in JobState::ALL.into_iter().filter(|s| s.is_terminal()) {
            assert!(Running.can_move_to(end) && Paused.can_move_to(end));
            for next in JobState::ALL {
                assert!(!end.can_move_to(next), "{end} -> {next}");
            }
        }
        assert!(!Running.can_move_to(Running) && !Running.can_move_to(Accepted));
    }
}
