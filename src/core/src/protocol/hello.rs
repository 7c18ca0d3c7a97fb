// SPDX-License-Identifier: GPL-3.0-or-later
//! ClientHello and ServerHello: fixed sizes, parsed by position, nothing optional (PGR/1 §3).

use crate::room::RoomId;

/// First four bytes of both hellos.
pub const MAGIC: [u8; 4] = *b"PGR1";
/// Protocol version byte.
pub const VERSION: u8 = 0x01;
/// Suite 0x01: SPAKE2-Ed25519, HKDF-SHA256, HMAC-SHA256, AES-256-GCM, Ed25519 (PGR/1 §3.2).
pub const SUITE: u8 = 0x01;
/// A SPAKE2 message: side tag (`A` = 0x41, `B` = 0x42) and a 32-byte Edwards point.
pub const SPAKE2_MSG_LEN: usize = 33;
/// Bytes of a ClientHello.
pub const CLIENT_HELLO_LEN: usize = 57;
/// Bytes of a ServerHello.
pub const SERVER_HELLO_LEN: usize = 41;
/// Bytes of a ServerFinished or ClientFinished.
pub const FINISHED_LEN: usize = 32;
/// Bytes of the server's flight: ServerHello ‖ ServerFinished.
pub const SERVER_FLIGHT_LEN: usize = SERVER_HELLO_LEN + FINISHED_LEN;
/// SPAKE2 side tag of the client's message.
pub const SIDE_A: u8 = 0x41;
/// SPAKE2 side tag of the server's message.
pub const SIDE_B: u8 = 0x42;
/// Bytes of a SPAKE2 identity: 7-byte prefix, room id, epoch.
pub const IDENTITY_LEN: usize = 27;

/// `magic 4 ‖ version 1 ‖ suite 1 ‖ flags 2 ‖ room_id 16 ‖ spake2_msg 33` (PGR/1 §3.1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientHello {
    /// The room the client wants to join.
    pub room_id: RoomId,
    /// The SPAKE2 side-A message.
    pub spake2_msg: [u8; SPAKE2_MSG_LEN],
}

/// `magic 4 ‖ version 1 ‖ suite 1 ‖ flags 2 ‖ spake2_msg 33` (PGR/1 §3.1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerHello {
    /// The SPAKE2 side-B message.
    pub spake2_msg: [u8; SPAKE2_MSG_LEN],
}

/// Why a hello was refused. The service closes the connection without answering (§8.1); the
/// variants exist for logs and tests.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HelloError {
    /// Not exactly the fixed size.
    #[error("the peer sent a handshake message of the wrong size")]
    WrongLength,
    /// Not `PGR1`.
    #[error("the peer does not speak PGR/1 (wrong magic bytes)")]
    BadMagic,
    /// A version other than 0x01.
    #[error("the peer speaks PGR/1 version {0}, this machine only version 1")]
    BadVersion(u8),
    /// A suite other than 0x01.
    #[error("the peer asked for cipher suite {0}, this machine only knows suite 1")]
    BadSuite(u8),
    /// Non-zero flags.
    #[error("the peer set handshake flags {0:#06x} that this machine does not know")]
    BadFlags(u16),
    /// The SPAKE2 message has the wrong side tag.
    #[error("the peer's key exchange message is for the wrong side")]
    BadSpake2Side,
}

/// Checks the 8-byte header shared by both hellos.
fn check_header(bytes: &[u8]) -> Result<(), HelloError> {
    if bytes[..4] != MAGIC {
        return Err(HelloError::BadMagic);
    }
    if bytes[4] != VERSION {
        return Err(HelloError::BadVersion(bytes[4]));
    }
    if bytes[5] != SUITE {
        return Err(HelloError::BadSuite(bytes[5]));
    }
    let flags = u16::from_be_bytes([bytes[6], bytes[7]]);
    if flags != 0 {
        return Err(HelloError::BadFlags(flags));
    }
    Ok(())
}

fn header() -> [u8; 8] {
    [MAGIC[0], MAGIC[1], MAGIC[2], MAGIC[3], VERSION, SUITE, 0, 0]
}

fn spake2_msg(bytes: &[u8], side: u8) -> Result<[u8; SPAKE2_MSG_LEN], HelloError> {
    let msg: [u8; SPAKE2_MSG_LEN] = bytes.try_into().map_err(|_| HelloError::WrongLength)?;
    if msg[0] != side {
        return Err(HelloError::BadSpake2Side);
    }
    Ok(msg)
}

impl ClientHello {
    /// The 57 wire bytes.
    #[must_use]
    pub fn encode(&self) -> [u8; CLIENT_HELLO_LEN] {
        let mut out = [0u8; CLIENT_HELLO_LEN];
        out[..8].copy_from_slice(&header());
        out[8..24].copy_from_slice(self.room_id.as_bytes());
        out[24..].copy_from_slice(&self.spake2_msg);
        out
    }

    /// Parses exactly 57 bytes (PGR/1 §3.1, §8.1).
    ///
    /// # Errors
    /// The first check that fails: size, magic, version, suite, flags, SPAKE2 side tag.
    pub fn parse(bytes: &[u8]) -> Result<Self, HelloError> {
        if bytes.len() != CLIENT_HELLO_LEN {
            return Err(HelloError::WrongLength);
        }
        check_header(bytes)?;
        let mut room_id = [0u8; 16];
        room_id.copy_from_slice(&bytes[8..24]);
        Ok(Self {
            room_id: RoomId::from_bytes(room_id),
            spake2_msg: spake2_msg(&bytes[24..], SIDE_A)?,
        })
    }
}

impl ServerHello {
    /// The 41 wire bytes.
    #[must_use]
    pub fn encode(&self) -> [u8; SERVER_HELLO_LEN] {
        let mut out = [0u8; SERVER_HELLO_LEN];
        out[..8].copy_from_slice(&header());
        out[8..].copy_from_slice(&self.spake2_msg);
        out
    }

    /// Parses exactly 41 bytes (PGR/1 §3.1).
    ///
    /// # Errors
    /// The first check that fails: size, magic, version, suite, flags, SPAKE2 side tag.
    pub fn parse(bytes: &[u8]) -> Result<Self, HelloError> {
        if bytes.len() != SERVER_HELLO_LEN {
            return Err(HelloError::WrongLength);
        }
        check_header(bytes)?;
        Ok(Self {
            spake2_msg: spake2_msg(&bytes[8..], SIDE_B)?,
        })
    }
}

/// The SPAKE2 identities `(idA, idB)`: `"PGR1|A|" ‖ room_id ‖ epoch_be32` and the same with
/// `B` (PGR/1 §3.3).
#[must_use]
pub fn spake2_identities(room_id: &RoomId, epoch: u32) -> ([u8; IDENTITY_LEN], [u8; IDENTITY_LEN]) {
    let make = |side: &[u8; 7]| {
        let mut id = [0u8; IDENTITY_LEN];
        id[..7].copy_from_slice(side);
        id[7..23].copy_from_slice(room_id.as_bytes());
        id[23..].copy_from_slice(&epoch.to_be_bytes());
        id
    };
    (make(b"PGR1|A|"), make(b"PGR1|B|"))
}

#[cfg(test)]
mod tests;
