// SPDX-License-Identifier: GPL-3.0-or-later
//! An established connection: both directions' record protection, the exporter and TH
//! (PGR/1 §4.4–§4.6, §5, §6).

use std::fmt;

use zeroize::Zeroizing;

use crate::protocol::keys::{KeySchedule, HASH_LEN};
use crate::protocol::node_auth::{NodeAuth, NodeAuthError, NodeIdentity, VerifiedNode};
use crate::protocol::record::{Opener, Record, RecordError, RecordType, Sealer};
use crate::protocol::Role;
use crate::room::RoomId;

/// The result of a successful handshake. The first record each way must be NODE_AUTH
/// ([`Self::seal_node_auth`], [`Self::verify_node_auth`]).
pub struct Session {
    role: Role,
    room_id: RoomId,
    epoch: u32,
    transcript_hash: [u8; HASH_LEN],
    exporter: Zeroizing<[u8; HASH_LEN]>,
    sealer: Sealer,
    opener: Opener,
}

impl Session {
    pub(super) fn new(role: Role, schedule: &KeySchedule, room_id: RoomId, epoch: u32) -> Self {
        let sending = role.sending();
        let receiving = role.receiving();
        Self {
            role,
            room_id,
            epoch,
            transcript_hash: *schedule.transcript_hash(),
            exporter: schedule.exporter(),
            sealer: Sealer::new(sending, schedule.traffic_secret(sending)),
            opener: Opener::new(receiving, schedule.traffic_secret(receiving)),
        }
    }

    /// This end's role.
    #[must_use]
    pub fn role(&self) -> Role {
        self.role
    }

    /// The room of the session.
    #[must_use]
    pub fn room_id(&self) -> RoomId {
        self.room_id
    }

    /// The room's epoch the session was made under; on rotation, close it (§7).
    #[must_use]
    pub fn epoch(&self) -> u32 {
        self.epoch
    }

    /// TH, the transcript hash (§4.1).
    #[must_use]
    pub fn transcript_hash(&self) -> &[u8; HASH_LEN] {
        &self.transcript_hash
    }

    /// The exporter secret (§4.6), for keys derived later (per-job keys).
    #[must_use]
    pub fn expose_exporter(&self) -> &[u8; HASH_LEN] {
        &self.exporter
    }

    /// Seals one record of this end's direction.
    ///
    /// # Errors
    /// See [`Sealer::seal`].
    pub fn seal(&mut self, record_type: RecordType, body: &[u8]) -> Result<Vec<u8>, RecordError> {
        self.sealer.seal(record_type, body)
    }

    /// Opens one record of the peer's direction.
    ///
    /// # Errors
    /// See [`Opener::open`]; close the connection on any of them.
    pub fn open(&mut self, record: &[u8]) -> Result<Record, RecordError> {
        self.opener.open(record)
    }

    /// The sending half.
    pub fn sealer(&mut self) -> &mut Sealer {
        &mut self.sealer
    }

    /// The receiving half.
    pub fn opener(&mut self) -> &mut Opener {
        &mut self.opener
    }

    /// Splits into the halves, for a writer task and a reader task. Take what else is
    /// needed (TH, exporter) first.
    #[must_use]
    pub fn into_parts(self) -> (Sealer, Opener) {
        (self.sealer, self.opener)
    }

    /// Seals this end's NODE_AUTH record: `node_pub ‖ sig` over TH with this end's role (§5).
    ///
    /// # Errors
    /// See [`Sealer::seal`] (cannot fail for the first record).
    pub fn seal_node_auth(&mut self, identity: &NodeIdentity) -> Result<Vec<u8>, RecordError> {
        let auth = identity.sign(self.role, &self.transcript_hash);
        self.sealer.seal(RecordType::NodeAuth, &auth.encode())
    }

    /// Checks the peer's NODE_AUTH record (already opened) against TH and the peer's role.
    /// Pinning is the caller's: see [`crate::protocol::check_pin`].
    ///
    /// # Errors
    /// [`NodeAuthError`] for another record type, a malformed body, a bad key or signature.
    pub fn verify_node_auth(&self, record: &Record) -> Result<VerifiedNode, NodeAuthError> {
        if record.record_type != RecordType::NodeAuth {
            return Err(NodeAuthError::NotNodeAuth);
        }
        NodeAuth::parse(&record.body)?.verify(self.role.peer(), &self.transcript_hash)
    }
}

impl fmt::Debug for Session {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Session")
            .field("role", &self.role)
            .field("room_id", &self.room_id)
            .field("epoch", &self.epoch)
            .field("transcript_hash", &hex::encode(self.transcript_hash))
            .field("sealer", &self.sealer)
            .field("opener", &self.opener)
            .finish_non_exhaustive()
    }
}
