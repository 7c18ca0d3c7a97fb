// SPDX-License-Identifier: GPL-3.0-or-later
//! The record layer: `len:u16 ‖ AES-256-GCM(type ‖ body)` with implicit sequence numbers
//! (PGR/1 §6).
//!
//! [`seal_record`] and [`open_record`] are the stateless primitives the vectors test;
//! [`Sealer`] and [`Opener`] hold one direction's keys and counter and do KEY_UPDATE.

use aes_gcm::aead::{AeadInPlace, KeyInit};
use aes_gcm::{Aes256Gcm, Nonce, Tag};

use crate::protocol::keys::{IV_LEN, KEY_LEN};

mod state;
mod types;

pub use state::{Opener, Sealer};
pub use types::{Direction, Record, RecordType};

/// Bytes of the AES-GCM tag.
pub const TAG_LEN: usize = 16;
/// Bytes of the length header.
pub const HEADER_LEN: usize = 2;
/// Smallest `len`: a type byte and the tag.
pub const MIN_CIPHERTEXT_LEN: usize = 1 + TAG_LEN;
/// Largest `len`.
pub const MAX_CIPHERTEXT_LEN: usize = u16::MAX as usize;
/// Largest plaintext (type byte included): 65535 − 16.
pub const MAX_PLAINTEXT_LEN: usize = MAX_CIPHERTEXT_LEN - TAG_LEN;
/// Largest body of one record.
pub const MAX_BODY_LEN: usize = MAX_PLAINTEXT_LEN - 1;
/// Cap on a JSON control body (HELLO, REQUEST, RESPONSE): one record, never split (§6.8).
pub const MAX_CONTROL_BODY_LEN: usize = MAX_BODY_LEN;
/// Records after which a sender should update its key (§6.6).
pub const KEY_UPDATE_RECORDS: u64 = 1 << 20;
/// Plaintext bytes after which a sender should update its key (§6.6).
pub const KEY_UPDATE_BYTES: u64 = 1 << 30;
/// Seconds after which a sender should update its key; the caller's clock decides (§6.6).
pub const KEY_UPDATE_INTERVAL_SECS: u64 = 600;
/// Records one key may protect; the last one must be a KEY_UPDATE (§6.6).
pub const MAX_RECORDS_PER_KEY: u64 = 1 << 32;
/// Longest life of a session, in seconds, before a fresh handshake (§6.7).
pub const SESSION_MAX_LIFETIME_SECS: u64 = 12 * 3600;

/// Why a record was refused. After any of these the connection is closed without sending
/// anything (§6.5); the receive counter has not moved.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    /// `len` below 17.
    #[error("the peer sent a record shorter than the smallest possible one")]
    TooShort,
    /// The record is not `2 + len` bytes.
    #[error("the record's length field does not match its size")]
    LengthMismatch,
    /// A body that does not fit in one record.
    #[error("a record body of {0} bytes is too long: at most 65518 bytes fit in one record")]
    BodyTooLong(usize),
    /// AES-GCM authentication failed: tampered, replayed, reordered or reflected.
    #[error("a record failed authentication: the connection was tampered with")]
    Decrypt,
    /// A type byte not in §6.4.
    #[error("the peer sent a record of unknown type {0:#04x}")]
    UnknownType(u8),
    /// A KEY_UPDATE with a body.
    #[error("the peer sent a malformed key update")]
    BadKeyUpdate,
    /// The key's last record must be a KEY_UPDATE, and this one is not.
    #[error("the connection's key is used up: it must be updated before more records")]
    KeyUpdateRequired,
}

impl RecordError {
    /// Stable machine-readable kind, as used in `tests/vectors/records.json`.
    #[must_use]
    pub fn kind(&self) -> &'static str {
        match self {
            Self::TooShort => "too-short",
            Self::LengthMismatch => "length-mismatch",
            Self::BodyTooLong(_) => "body-too-long",
            Self::Decrypt => "decrypt",
            Self::UnknownType(_) => "unknown-type",
            Self::BadKeyUpdate => "bad-key-update",
            Self::KeyUpdateRequired => "key-update-required",
        }
    }
}

/// Reads the length header (§6.1).
///
/// # Errors
/// [`RecordError::TooShort`] when `len` < 17.
pub fn ciphertext_len(header: [u8; HEADER_LEN]) -> Result<usize, RecordError> {
    let len = usize::from(u16::from_be_bytes(header));
    if len < MIN_CIPHERTEXT_LEN {
        return Err(RecordError::TooShort);
    }
    Ok(len)
}

/// `nonce = iv XOR (0^4 ‖ seq_be64)` (§6.2).
#[must_use]
pub fn nonce(iv: &[u8; IV_LEN], seq: u64) -> [u8; IV_LEN] {
    let mut out = *iv;
    for (byte, s) in out[4..].iter_mut().zip(seq.to_be_bytes()) {
        *byte ^= s;
    }
    out
}

/// `AAD = "PGR1" ‖ dir ‖ len_be16` (§6.2).
#[must_use]
pub fn aad(direction: Direction, ciphertext_len: u16) -> [u8; 7] {
    let len = ciphertext_len.to_be_bytes();
    [b'P', b'G', b'R', b'1', direction.byte(), len[0], len[1]]
}

pub(crate) fn seal_with(
    cipher: &Aes256Gcm,
    iv: &[u8; IV_LEN],
    direction: Direction,
    seq: u64,
    record_type: RecordType,
    body: &[u8],
) -> Result<Vec<u8>, RecordError> {
    if body.len() > MAX_BODY_LEN {
        return Err(RecordError::BodyTooLong(body.len()));
    }
    if record_type == RecordType::KeyUpdate && !body.is_empty() {
        return Err(RecordError::BadKeyUpdate);
    }
    let len = u16::try_from(1 + body.len() + TAG_LEN).map_err(|_| RecordError::BodyTooLong(body.len()))?;
    let mut out = Vec::with_capacity(HEADER_LEN + usize::from(len));
    out.extend_from_slice(&len.to_be_bytes());
    out.push(record_type.byte());
    out.extend_from_slice(body);
    let tag = cipher
        .encrypt_in_place_detached(
            Nonce::from_slice(&nonce(iv, seq)),
            &aad(direction, len),
            &mut out[HEADER_LEN..],
        )
        .map_err(|_| RecordError::BodyTooLong(body.len()))?;
    out.extend_from_slice(&tag);
    Ok(out)
}

pub(crate) fn open_with(
    cipher: &Aes256Gcm,
    iv: &[u8; IV_LEN],
    direction: Direction,
    seq: u64,
    record: &[u8],
) -> Result<Record, RecordError> {
    let header: [u8; HEADER_LEN] = record
        .get(..HEADER_LEN)
        .and_then(|h| h.try_into().ok())
        .ok_or(RecordError::TooShort)?;
    let len = ciphertext_len(header)?;
    if record.len() != HEADER_LEN + len {
        return Err(RecordError::LengthMismatch);
    }
    let (sealed, tag) = record[HEADER_LEN..].split_at(len - TAG_LEN);
    let mut plaintext = sealed.to_vec();
    cipher
        .decrypt_in_place_detached(
            Nonce::from_slice(&nonce(iv, seq)),
            &aad(direction, u16::from_be_bytes(header)),
            &mut plaintext,
            Tag::from_slice(tag),
        )
        .map_err(|_| RecordError::Decrypt)?;
    let record_type = RecordType::from_byte(plaintext[0]).ok_or(RecordError::UnknownType(plaintext[0]))?;
    plaintext.remove(0);
    if record_type == RecordType::KeyUpdate && !plaintext.is_empty() {
        return Err(RecordError::BadKeyUpdate);
    }
    Ok(Record {
        record_type,
        body: plaintext,
    })
}

/// Seals one record with explicit key, IV and sequence number (the vectors' primitive).
///
/// # Errors
/// [`RecordError::BodyTooLong`] above [`MAX_BODY_LEN`]; [`RecordError::BadKeyUpdate`] for a
/// KEY_UPDATE with a body.
pub fn seal_record(
    key: &[u8; KEY_LEN],
    iv: &[u8; IV_LEN],
    direction: Direction,
    seq: u64,
    record_type: RecordType,
    body: &[u8],
) -> Result<Vec<u8>, RecordError> {
    seal_with(&Aes256Gcm::new(key.into()), iv, direction, seq, record_type, body)
}

/// Opens one whole record (`len ‖ ciphertext`) with explicit key, IV and sequence number.
///
/// # Errors
/// Length, authentication or type problems; see [`RecordError`].
pub fn open_record(
    key: &[u8; KEY_LEN],
    iv: &[u8; IV_LEN],
    direction: Direction,
    seq: u64,
    record: &[u8],
) -> Result<Record, RecordError> {
    open_with(&Aes256Gcm::new(key.into()), iv, direction, seq, record)
}

#[cfg(test)]
mod tests;
