// SPDX-License-Identifier: GPL-3.0-or-later
//! The room id: 16 random bytes made with the room, never derived from the code (PGR/1 §2.5).

use std::fmt;
use std::str::FromStr;

use rand_core::CryptoRngCore;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Length of a room id in bytes.
pub const ROOM_ID_LEN: usize = 16;

/// A room's public random id: announced in mDNS (`rid=`), sent in the ClientHello, mixed into
/// the SPAKE2 identities and used as the Argon2id salt. Shown and serialised as 32 lowercase
/// hex digits.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RoomId([u8; ROOM_ID_LEN]);

/// Why a room id string was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RoomIdError {
    /// Not 32 hexadecimal digits.
    #[error("a room id is 32 hexadecimal digits")]
    BadHex,
}

impl RoomId {
    /// A fresh id for a new room.
    pub fn generate(rng: &mut impl CryptoRngCore) -> Self {
        let mut bytes = [0u8; ROOM_ID_LEN];
        rng.fill_bytes(&mut bytes);
        Self(bytes)
    }

    /// The id with these bytes.
    #[must_use]
    pub const fn from_bytes(bytes: [u8; ROOM_ID_LEN]) -> Self {
        Self(bytes)
    }

    /// The raw bytes, as on the wire.
    #[must_use]
    pub const fn as_bytes(&self) -> &[u8; ROOM_ID_LEN] {
        &self.0
    }

    /// 32 lowercase hex digits, the mDNS `rid=` value.
    #[must_use]
    pub fn to_hex(&self) -> String {
        hex::encode(self.0)
    }

    /// Parses 32 hex digits (either case).
    ///
    /// # Errors
    /// [`RoomIdError::BadHex`] for anything else.
    pub fn from_hex(text: &str) -> Result<Self, RoomIdError> {
        let mut bytes = [0u8; ROOM_ID_LEN];
        hex::decode_to_slice(text, &mut bytes).map_err(|_| RoomIdError::BadHex)?;
        Ok(Self(bytes))
    }
}

impl fmt::Display for RoomId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_hex())
    }
}

impl fmt::Debug for RoomId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RoomId({})", self.to_hex())
    }
}

impl FromStr for RoomId {
    type Err = RoomIdError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::from_hex(text)
    }
}

impl Serialize for RoomId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.to_hex())
    }
}

impl<'de> Deserialize<'de> for RoomId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Self::from_hex(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use rand_core::OsRng;

    use super::*;

    #[test]
    fn hex_round_trip() {
        let id = RoomId::generate(&mut OsRng);
        assert_eq!(id.to_hex().len(), 32);
        assert_eq!(RoomId::from_hex(&id.to_hex()), Ok(id));
        assert_eq!(id.to_string().parse::<RoomId>(), Ok(id));
        assert_eq!(RoomId::from_hex(&id.to_hex().to_uppercase()), Ok(id));
    }

    #[test]
    fn bad_hex_is_refused() {
        for text in ["", "00", &"0".repeat(33), &"g".repeat(32)] {
            assert_eq!(RoomId::from_hex(text), Err(RoomIdError::BadHex), "{text}");
        }
    }

    #[test]
    fn serde_uses_hex() {
        let id = RoomId::from_bytes([0xAB; 16]);
        let json = serde_json::to_string(&id).unwrap();
        assert_eq!(json, format!("\"{}\"", "ab".repeat(16)));
        assert_eq!(serde_json::from_str::<RoomId>(&json).unwrap(), id);
        assert_eq!(format!("{id:?}"), format!("RoomId({})", "ab".repeat(16)));
    }
}
