// SPDX-License-Identifier: GPL-3.0-or-later
//! Jobs over PGR/1 (docs/protocol.md §7.6): a connection of purpose "job" carries REQUEST
//! records naming an operation, bulk DATA records ended by DATA_END (SHA-256 and length),
//! and LOG records (offset and bytes) of a followed job.

use serde::{Deserialize, Serialize};

use super::checkpoint::ShippedCheckpoint;
use super::record::JobRecord;
use super::spec::JobSpec;

/// The HELLO purpose of a job connection.
pub const PURPOSE_JOB: &str = "job";

/// Bytes of payload per DATA or LOG record (below the record's body limit).
pub const CHUNK: usize = 60_000;

/// What the submitter asks, one REQUEST each.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum JobRequest {
    /// Run this job; the workspace follows in DATA records and one DATA_END.
    Submit {
        /// The job.
        spec: Box<JobSpec>,
    },
    /// Coordinate a distributed training from the receiving machine on the sender's behalf
    /// (a notebook without a service of its own); the workspace follows as for `Submit`.
    Distribute {
        /// The training's template (argv is the script and its arguments).
        spec: Box<JobSpec>,
        /// Which machines: "" every eligible one, "N", or names / node ids with commas.
        #[serde(default)]
        nodes: String,
    },
    /// Stream the job's output from `offset`, its state changes, and its end.
    Follow {
        /// The handle.
        job: String,
        /// Log offset the submitter already has.
        offset: u64,
    },
    /// Stop the job.
    Cancel {
        /// The handle.
        job: String,
    },
    /// Send a collected artifact in DATA records and one DATA_END.
    Artifact {
        /// The handle.
        job: String,
        /// The artifact's name.
        name: String,
    },
    /// The running job's newest checkpoint if its step is above `after_step`: a reply with
    /// `checkpoint`, then the file in DATA records and one DATA_END; or a reply without.
    Checkpoint {
        /// The handle.
        job: String,
        /// The step the coordinator holds already (`i64::MIN`: none).
        after_step: i64,
    },
}

/// The executor's answer to a REQUEST (and, while following, each state change).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobReply {
    /// Whether the request succeeded.
    pub ok: bool,
    /// Why not, one sentence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The job's record now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub record: Option<Box<JobRecord>>,
    /// While following: the job ended and every byte of output was sent.
    #[serde(default)]
    pub done: bool,
    /// Answering `Checkpoint`: the one that follows in DATA records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<ShippedCheckpoint>,
}

impl JobReply {
    /// A refusal.
    #[must_use]
    pub fn refused(error: impl Into<String>) -> Self {
        Self {
            ok: false,
            error: Some(error.into()),
            record: None,
            done: false,
            checkpoint: None,
        }
    }

    /// A success carrying `record`.
    #[must_use]
    pub fn with(record: JobRecord, done: bool) -> Self {
        Self {
            ok: true,
            error: None,
            record: Some(Box::new(record)),
            done,
            checkpoint: None,
        }
    }
}

/// Body of DATA_END: SHA-256 then total length, big-endian.
#[must_use]
pub fn data_end(sha256: [u8; 32], total: u64) -> Vec<u8> {
    let mut body = sha256.to_vec();
    body.extend_from_slice(&total.to_be_bytes());
    body
}

/// Parses a DATA_END body.
#[must_use]
pub fn parse_data_end(body: &[u8]) -> Option<([u8; 32], u64)> {
    if body.len() != 40 {
        return None;
    }
    let sha: [u8; 32] = body[..32].try_into().ok()?;
    let total = u64::from_be_bytes(body[32..].try_into().ok()?);
    Some((sha, total))
}

/// Body of LOG: offset (big-endian u64) then the bytes.
#[must_use]
pub fn log_body(offset: u64, bytes: &[u8]) -> Vec<u8> {
    let mut body = offset.to_be_bytes().to_vec();
    body.extend_from_slice(bytes);
    body
}

/// Parses a LOG body.
#[must_use]
pub fn parse_log(body: &[u8]) -> Option<(u64, &[u8])> {
    let offset = u64::from_be_bytes(body.get(..8)?.try_into().ok()?);
    Some((offset, &body[8..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_round_trip_and_bad_lengths_are_refused() {
        assert_eq!(parse_data_end(&data_end([7; 32], 42)), Some(([7; 32], 42)));
        assert_eq!(parse_data_end(&[0; 39]), None);
        assert_eq!(parse_log(&log_body(9, b"abc")), Some((9, &b"abc"[..])));
        assert_eq!(parse_log(&[1, 2]), None);
        let request: JobRequest = serde_json::from_str(r#"{"op":"cancel","job":"x"}"#).unwrap();
        assert_eq!(request, JobRequest::Cancel { job: "x".into() });
        assert!(serde_json::from_str::<JobRequest>(r#"{"op":"format_disk"}"#).is_err());
        let asked: JobRequest =
            serde_json::from_str(r#"{"op":"checkpoint","job":"x","after_step":-1}"#).unwrap();
        assert_eq!(
            asked,
            JobRequest::Checkpoint {
                job: "x".into(),
                after_step: -1
            }
        );
        // A reply without a checkpoint says nothing of one (older peers parse it unchanged).
        let none = serde_json::to_string(&JobReply::refused("no")).unwrap();
        assert!(!none.contains("checkpoint"), "{none}");
    }
}
