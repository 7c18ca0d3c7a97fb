// SPDX-License-Identifier: GPL-3.0-or-later
//! Directions, record types and decrypted records (PGR/1 §6.2, §6.4).

/// The direction byte of the AAD (§6.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Direction {
    /// Client to server, `0x01`.
    ClientToServer,
    /// Server to client, `0x02`.
    ServerToClient,
}

impl Direction {
    /// The AAD byte.
    #[must_use]
    pub fn byte(self) -> u8 {
        match self {
            Self::ClientToServer => 0x01,
            Self::ServerToClient => 0x02,
        }
    }
}

/// Record types (§6.4). Any other byte is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RecordType {
    /// `0x01` node key and transcript signature (§5).
    NodeAuth,
    /// `0x02` JSON: purpose, versions, capabilities.
    Hello,
    /// `0x10` JSON request.
    Request,
    /// `0x11` JSON response.
    Response,
    /// `0x20` bulk bytes.
    Data,
    /// `0x21` end of bulk data: SHA-256 and total length.
    DataEnd,
    /// `0x30` log bytes of a job attempt at an offset.
    Log,
    /// `0x31` acknowledged offset.
    Ack,
    /// `0x40` liveness probe.
    Ping,
    /// `0x41` liveness answer.
    Pong,
    /// `0x50` the sender's next records use the next key (§6.6); empty body.
    KeyUpdate,
    /// `0x7F` orderly end, with a reason.
    Close,
}

impl RecordType {
    /// Every type, in code order.
    pub const ALL: [Self; 12] = [
        Self::NodeAuth,
        Self::Hello,
        Self::Request,
        Self::Response,
        Self::Data,
        Self::DataEnd,
        Self::Log,
        Self::Ack,
        Self::Ping,
        Self::Pong,
        Self::KeyUpdate,
        Self::Close,
    ];

    /// The type byte.
    #[must_use]
    pub fn byte(self) -> u8 {
        match self {
            Self::NodeAuth => 0x01,
            Self::Hello => 0x02,
            Self::Request => 0x10,
            Self::Response => 0x11,
            Self::Data => 0x20,
            Self::DataEnd => 0x21,
            Self::Log => 0x30,
            Self::Ack => 0x31,
            Self::Ping => 0x40,
            Self::Pong => 0x41,
            Self::KeyUpdate => 0x50,
            Self::Close => 0x7F,
        }
    }

    /// The type of a byte, `None` for an unknown one.
    #[must_use]
    pub fn from_byte(byte: u8) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.byte() == byte)
    }
}

/// One decrypted record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// Its type.
    pub record_type: RecordType,
    /// Its body (may be empty).
    pub body: Vec<u8>,
}
