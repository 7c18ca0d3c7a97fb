// SPDX-License-Identifier: GPL-3.0-or-later
//! The SPAKE2 password: `Argon2id(normalised code, salt = room_id)` (PGR/1 §2.6).
//!
//! Computed once when joining; the service may store this value instead of the words
//! (PGR/1 §11). It is password-equivalent: it is zeroized on drop and never printed.

use std::fmt;

use argon2::{Algorithm, Argon2, Params, Version};
use subtle::ConstantTimeEq;
use zeroize::{Zeroize, ZeroizeOnDrop};

use crate::room::code::RoomCode;
use crate::room::id::RoomId;

/// Argon2id memory cost in KiB (19 MiB).
pub const ARGON2_M_KIB: u32 = 19_456;
/// Argon2id time cost (passes).
pub const ARGON2_T: u32 = 2;
/// Argon2id parallelism (lanes).
pub const ARGON2_P: u32 = 1;
/// Argon2id output length in bytes.
pub const ARGON2_OUTPUT_LEN: usize = 32;

/// The 32-byte SPAKE2 password of a room at one epoch's code.
#[derive(Clone, Zeroize, ZeroizeOnDrop)]
pub struct RoomPassword([u8; ARGON2_OUTPUT_LEN]);

impl RoomPassword {
    /// Runs Argon2id (version 0x13, m = 19456 KiB, t = 2, p = 1, 32 bytes) over the code's
    /// normalised bytes with the room id as salt. Takes about 20 MiB and tens of milliseconds
    /// in a release build.
    #[must_use]
    pub fn derive(code: &RoomCode, room_id: &RoomId) -> Self {
        let params = Params::new(ARGON2_M_KIB, ARGON2_T, ARGON2_P, Some(ARGON2_OUTPUT_LEN))
            .expect("the fixed Argon2id parameters are in range");
        let argon2 = Argon2::new(Algorithm::Argon2id, Version::V0x13, params);
        let mut out = Self([0u8; ARGON2_OUTPUT_LEN]);
        argon2
            .hash_password_into(code.normalised_bytes(), room_id.as_bytes(), &mut out.0)
            .expect("a 16-byte salt and a short password are in Argon2id's range");
        out
    }

    /// A stored password (PGR/1 §11), as read back from the service's state.
    #[must_use]
    pub const fn from_bytes(bytes: [u8; ARGON2_OUTPUT_LEN]) -> Self {
        Self(bytes)
    }

    /// The raw bytes, for the SPAKE2 exchange and for storing.
    #[must_use]
    pub fn expose_secret(&self) -> &[u8; ARGON2_OUTPUT_LEN] {
        &self.0
    }
}

impl PartialEq for RoomPassword {
    fn eq(&self, other: &Self) -> bool {
        bool::from(self.0.ct_eq(&other.0))
    }
}

impl Eq for RoomPassword {}

impl fmt::Debug for RoomPassword {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("RoomPassword(<redacted>)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn salt_and_code_both_matter() {
        let code = RoomCode::parse("zoo zebra wrist abandon").unwrap();
        let other = RoomCode::parse("zoo zebra wrist ability").unwrap();
        let a = RoomId::from_bytes([1; 16]);
        let b = RoomId::from_bytes([2; 16]);
        let pw = RoomPassword::derive(&code, &a);
        assert_eq!(pw, RoomPassword::derive(&code, &a));
        assert_ne!(pw, RoomPassword::derive(&code, &b));
        assert_ne!(pw, RoomPassword::derive(&other, &a));
        assert_eq!(RoomPassword::from_bytes(*pw.expose_secret()), pw);
        assert_eq!(format!("{pw:?}"), "RoomPassword(<redacted>)");
    }
}
