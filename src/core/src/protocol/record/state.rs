// SPDX-License-Identifier: GPL-3.0-or-later
//! One direction's record protection: key, IV, implicit sequence number, KEY_UPDATE
//! (PGR/1 §6.2, §6.5, §6.6).

use std::fmt;

use aes_gcm::aead::KeyInit;
use aes_gcm::Aes256Gcm;
use zeroize::Zeroizing;

use super::{
    open_with, seal_with, Direction, Record, RecordError, RecordType, KEY_UPDATE_BYTES, KEY_UPDATE_RECORDS,
    MAX_RECORDS_PER_KEY,
};
use crate::protocol::keys::{TrafficSecret, IV_LEN};

/// Keys of one direction at one point of its KEY_UPDATE chain.
struct DirectionKeys {
    direction: Direction,
    secret: TrafficSecret,
    cipher: Aes256Gcm,
    iv: Zeroizing<[u8; IV_LEN]>,
    seq: u64,
    updates: u64,
}

impl DirectionKeys {
    fn new(direction: Direction, secret: TrafficSecret) -> Self {
        let key = secret.key();
        Self {
            direction,
            cipher: Aes256Gcm::new((&*key).into()),
            iv: secret.iv(),
            secret,
            seq: 0,
            updates: 0,
        }
    }

    /// Moves to the next traffic secret; the sequence number starts again at 0 (§6.6).
    fn update(&mut self) {
        let updates = self.updates + 1;
        *self = Self::new(self.direction, self.secret.next());
        self.updates = updates;
    }

    /// Whether the record at the current `seq` must be a KEY_UPDATE: the key's last slot.
    fn last_slot(&self) -> bool {
        self.seq >= MAX_RECORDS_PER_KEY - 1
    }
}

/// Seals this side's records. The counter advances only when a record was produced.
pub struct Sealer {
    keys: DirectionKeys,
    bytes_since_update: u64,
}

impl Sealer {
    /// Starts a direction at its initial traffic secret (§4.4).
    #[must_use]
    pub fn new(direction: Direction, secret: TrafficSecret) -> Self {
        Self {
            keys: DirectionKeys::new(direction, secret),
            bytes_since_update: 0,
        }
    }

    /// Seals one record; a KEY_UPDATE (empty body) switches to the next key right after it
    /// is sealed (§6.6).
    ///
    /// # Errors
    /// [`RecordError::BodyTooLong`]; [`RecordError::BadKeyUpdate`] for a KEY_UPDATE with a
    /// body; [`RecordError::KeyUpdateRequired`] when only a KEY_UPDATE may be sent.
    pub fn seal(&mut self, record_type: RecordType, body: &[u8]) -> Result<Vec<u8>, RecordError> {
        let key_update = record_type == RecordType::KeyUpdate;
        if self.keys.last_slot() && !key_update {
            return Err(RecordError::KeyUpdateRequired);
        }
        let keys = &self.keys;
        let wire = seal_with(
            &keys.cipher,
            &keys.iv,
            keys.direction,
            keys.seq,
            record_type,
            body,
        )?;
        if key_update {
            self.keys.update();
            self.bytes_since_update = 0;
        } else {
            self.keys.seq += 1;
            self.bytes_since_update = self.bytes_since_update.saturating_add(body.len() as u64 + 1);
        }
        Ok(wire)
    }

    /// Seals a KEY_UPDATE and switches to the next key.
    ///
    /// # Errors
    /// None in practice; the signature matches [`Self::seal`].
    pub fn seal_key_update(&mut self) -> Result<Vec<u8>, RecordError> {
        self.seal(RecordType::KeyUpdate, &[])
    }

    /// Whether the counters say it is time for a KEY_UPDATE: 2^20 records or 1 GiB of
    /// plaintext under this key. The 10-minute rule is the caller's, with its clock (§6.6).
    #[must_use]
    pub fn needs_key_update(&self) -> bool {
        self.keys.seq >= KEY_UPDATE_RECORDS || self.bytes_since_update >= KEY_UPDATE_BYTES
    }

    /// Sequence number of the next record under the current key.
    #[must_use]
    pub fn seq(&self) -> u64 {
        self.keys.seq
    }

    /// KEY_UPDATEs sent so far.
    #[must_use]
    pub fn key_updates(&self) -> u64 {
        self.keys.updates
    }

    /// The direction sealed.
    #[must_use]
    pub fn direction(&self) -> Direction {
        self.keys.direction
    }

    #[cfg(test)]
    pub(crate) fn set_seq_for_test(&mut self, seq: u64) {
        self.keys.seq = seq;
    }

    #[cfg(test)]
    pub(crate) fn keys_bytes_for_test(&mut self, bytes: u64) {
        self.bytes_since_update += bytes;
    }
}

/// Opens the peer's records. On any error the counter does not move, and the caller must
/// close the connection (§6.5).
pub struct Opener {
    keys: DirectionKeys,
}

impl Opener {
    /// Starts a direction at its initial traffic secret (§4.4).
    #[must_use]
    pub fn new(direction: Direction, secret: TrafficSecret) -> Self {
        Self {
            keys: DirectionKeys::new(direction, secret),
        }
    }

    /// Opens one whole record (`len ‖ ciphertext`, as read after [`super::ciphertext_len`]).
    /// A KEY_UPDATE switches to the next key right after it is decrypted and is returned
    /// like any record.
    ///
    /// # Errors
    /// See [`RecordError`]; [`RecordError::KeyUpdateRequired`] when the key's last record is
    /// not a KEY_UPDATE.
    pub fn open(&mut self, record: &[u8]) -> Result<Record, RecordError> {
        let keys = &self.keys;
        let opened = open_with(&keys.cipher, &keys.iv, keys.direction, keys.seq, record)?;
        if opened.record_type == RecordType::KeyUpdate {
            self.keys.update();
        } else if self.keys.last_slot() {
            return Err(RecordError::KeyUpdateRequired);
        } else {
            self.keys.seq += 1;
        }
        Ok(opened)
    }

    /// Sequence number expected for the next record under the current key.
    #[must_use]
    pub fn seq(&self) -> u64 {
        self.keys.seq
    }

    /// KEY_UPDATEs received so far.
    #[must_use]
    pub fn key_updates(&self) -> u64 {
        self.keys.updates
    }

    /// The direction opened.
    #[must_use]
    pub fn direction(&self) -> Direction {
        self.keys.direction
    }

    #[cfg(test)]
    pub(crate) fn set_seq_for_test(&mut self, seq: u64) {
        self.keys.seq = seq;
    }
}

impl fmt::Debug for Sealer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sealer")
            .field("direction", &self.keys.direction)
            .field("seq", &self.keys.seq)
            .field("key_updates", &self.keys.updates)
            .finish_non_exhaustive()
    }
}

impl fmt::Debug for Opener {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Opener")
            .field("direction", &self.keys.direction)
            .field("seq", &self.keys.seq)
            .field("key_updates", &self.keys.updates)
            .finish_non_exhaustive()
    }
}
