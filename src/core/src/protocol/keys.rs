// SPDX-License-Identifier: GPL-3.0-or-later
//! The key schedule: transcript hash, Finished MACs, traffic secrets, exporter, KEY_UPDATE
//! (PGR/1 §4). HKDF and HMAC are over SHA-256.

use std::fmt;

use hkdf::Hkdf;
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};
use zeroize::Zeroizing;

use crate::protocol::hello::{CLIENT_HELLO_LEN, FINISHED_LEN, SERVER_HELLO_LEN};
use crate::protocol::record::Direction;

/// Bytes of a SHA-256 output, a secret and the transcript hash.
pub const HASH_LEN: usize = 32;
/// Bytes of an AES-256-GCM key.
pub const KEY_LEN: usize = 32;
/// Bytes of an AES-GCM IV (nonce base).
pub const IV_LEN: usize = 12;

/// Prefix of the transcript hash input (§4.1).
pub const TRANSCRIPT_LABEL: &[u8] = b"PGR1 transcript";
/// HKDF-Expand labels of §4.2–§4.5.
pub mod labels {
    /// Server Finished key.
    pub const S_FINISHED: &[u8] = b"pgr1 s finished";
    /// Client Finished key.
    pub const C_FINISHED: &[u8] = b"pgr1 c finished";
    /// Client-to-server traffic secret.
    pub const C2S_TRAFFIC: &[u8] = b"pgr1 c2s traffic";
    /// Server-to-client traffic secret.
    pub const S2C_TRAFFIC: &[u8] = b"pgr1 s2c traffic";
    /// Record key from a traffic secret.
    pub const KEY: &[u8] = b"pgr1 key";
    /// Record IV from a traffic secret.
    pub const IV: &[u8] = b"pgr1 iv";
    /// Exporter secret.
    pub const EXPORTER: &[u8] = b"pgr1 exporter";
    /// Next traffic secret on KEY_UPDATE.
    pub const KEY_UPDATE: &[u8] = b"pgr1 key update";
}

type HmacSha256 = Hmac<Sha256>;

/// A Finished value did not verify: the peer used another code (or another epoch).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the peer's key confirmation did not match: it does not know this room's current code")]
pub struct FinishedMismatch;

/// `TH = SHA-256("PGR1 transcript" ‖ ClientHello ‖ ServerHello)` over the bytes as sent (§4.1).
#[must_use]
pub fn transcript_hash(
    client_hello: &[u8; CLIENT_HELLO_LEN],
    server_hello: &[u8; SERVER_HELLO_LEN],
) -> [u8; HASH_LEN] {
    let mut hash = Sha256::new();
    hash.update(TRANSCRIPT_LABEL);
    hash.update(client_hello);
    hash.update(server_hello);
    hash.finalize().into()
}

/// `HKDF-Expand(prk, label, N)`; `prk` is always a full-length PRK here.
fn expand<const N: usize>(prk: &[u8; HASH_LEN], label: &[u8]) -> Zeroizing<[u8; N]> {
    let hkdf = Hkdf::<Sha256>::from_prk(prk).expect("a 32-byte PRK is long enough");
    let mut out = Zeroizing::new([0u8; N]);
    hkdf.expand(label, out.as_mut())
        .expect("at most 32 bytes are expanded, far below HKDF's limit");
    out
}

fn hmac(key: &[u8; HASH_LEN], parts: &[&[u8]]) -> HmacSha256 {
    let mut mac = <HmacSha256 as Mac>::new_from_slice(key).expect("HMAC accepts any key length");
    for part in parts {
        mac.update(part);
    }
    mac
}

/// The secrets of one connection after SPAKE2: TH and `PRK = HKDF-Extract(TH, K)` (§4.2).
pub struct KeySchedule {
    transcript_hash: [u8; HASH_LEN],
    prk: Zeroizing<[u8; HASH_LEN]>,
}

impl KeySchedule {
    /// Extracts the PRK from the SPAKE2 key `k` with the transcript hash as salt.
    #[must_use]
    pub fn new(k: &[u8], transcript_hash: [u8; HASH_LEN]) -> Self {
        let (prk, _) = Hkdf::<Sha256>::extract(Some(&transcript_hash), k);
        let mut out = Zeroizing::new([0u8; HASH_LEN]);
        out.copy_from_slice(&prk);
        Self {
            transcript_hash,
            prk: out,
        }
    }

    /// TH, public (both hellos are public), the value NODE_AUTH signs (§5).
    #[must_use]
    pub fn transcript_hash(&self) -> &[u8; HASH_LEN] {
        &self.transcript_hash
    }

    /// The PRK, for test vectors only.
    #[must_use]
    pub fn expose_prk(&self) -> &[u8; HASH_LEN] {
        &self.prk
    }

    /// `SF = HMAC(HKDF-Expand(PRK, "pgr1 s finished", 32), TH)` (§4.3).
    #[must_use]
    pub fn server_finished(&self) -> [u8; FINISHED_LEN] {
        let fs = expand::<HASH_LEN>(&self.prk, labels::S_FINISHED);
        hmac(&fs, &[&self.transcript_hash]).finalize().into_bytes().into()
    }

    /// `CF = HMAC(HKDF-Expand(PRK, "pgr1 c finished", 32), TH ‖ SF)` (§4.3).
    #[must_use]
    pub fn client_finished(&self, server_finished: &[u8; FINISHED_LEN]) -> [u8; FINISHED_LEN] {
        let fc = expand::<HASH_LEN>(&self.prk, labels::C_FINISHED);
        hmac(&fc, &[&self.transcript_hash, server_finished])
            .finalize()
            .into_bytes()
            .into()
    }

    /// Checks a received SF in constant time.
    ///
    /// # Errors
    /// [`FinishedMismatch`] when it differs (or has the wrong length).
    pub fn verify_server_finished(&self, received: &[u8]) -> Result<(), FinishedMismatch> {
        let fs = expand::<HASH_LEN>(&self.prk, labels::S_FINISHED);
        hmac(&fs, &[&self.transcript_hash])
            .verify_slice(received)
            .map_err(|_| FinishedMismatch)
    }

    /// Checks a received CF in constant time, given the SF this side sent.
    ///
    /// # Errors
    /// [`FinishedMismatch`] when it differs (or has the wrong length).
    pub fn verify_client_finished(
        &self,
        server_finished: &[u8; FINISHED_LEN],
        received: &[u8],
    ) -> Result<(), FinishedMismatch> {
        let fc = expand::<HASH_LEN>(&self.prk, labels::C_FINISHED);
        hmac(&fc, &[&self.transcript_hash, server_finished])
            .verify_slice(received)
            .map_err(|_| FinishedMismatch)
    }

    /// The initial traffic secret of one direction (§4.4).
    #[must_use]
    pub fn traffic_secret(&self, direction: Direction) -> TrafficSecret {
        let label = match direction {
            Direction::ClientToServer => labels::C2S_TRAFFIC,
            Direction::ServerToClient => labels::S2C_TRAFFIC,
        };
        TrafficSecret(expand(&self.prk, label))
    }

    /// `exporter = HKDF-Expand(PRK, "pgr1 exporter", 32)`: channel binding for later keys (§4.6).
    #[must_use]
    pub fn exporter(&self) -> Zeroizing<[u8; HASH_LEN]> {
        expand(&self.prk, labels::EXPORTER)
    }
}

impl fmt::Debug for KeySchedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeySchedule")
            .field("transcript_hash", &hex::encode(self.transcript_hash))
            .finish_non_exhaustive()
    }
}

/// One direction's traffic secret; the record key and IV derive from it (§4.4, §4.5).
#[derive(Clone)]
pub struct TrafficSecret(Zeroizing<[u8; HASH_LEN]>);

impl TrafficSecret {
    /// A secret from its bytes (test vectors).
    #[must_use]
    pub fn from_bytes(bytes: [u8; HASH_LEN]) -> Self {
        Self(Zeroizing::new(bytes))
    }

    /// The raw secret, for test vectors only.
    #[must_use]
    pub fn expose_secret(&self) -> &[u8; HASH_LEN] {
        &self.0
    }

    /// `key = HKDF-Expand(ts, "pgr1 key", 32)`.
    #[must_use]
    pub fn key(&self) -> Zeroizing<[u8; KEY_LEN]> {
        expand(&self.0, labels::KEY)
    }

    /// `iv = HKDF-Expand(ts, "pgr1 iv", 12)`.
    #[must_use]
    pub fn iv(&self) -> Zeroizing<[u8; IV_LEN]> {
        expand(&self.0, labels::IV)
    }

    /// The secret after one KEY_UPDATE: `ts' = HKDF-Expand(ts, "pgr1 key update", 32)` (§6.6).
    #[must_use]
    pub fn next(&self) -> Self {
        Self(expand(&self.0, labels::KEY_UPDATE))
    }
}

impl fmt::Debug for TrafficSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("TrafficSecret(<redacted>)")
    }
}

#[cfg(test)]
mod tests;
