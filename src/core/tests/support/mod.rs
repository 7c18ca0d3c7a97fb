// SPDX-License-Identifier: GPL-3.0-or-later
//! The shapes of `tests/vectors/*.json` (PGR/1 §12) and helpers shared by the checker
//! (`vectors.rs`) and the generator (`generate_vectors.rs`). Byte strings are lowercase hex.

#![allow(dead_code)] // Each test binary uses a different part of this module.

use rand_core::{CryptoRng, RngCore};
use serde::{Deserialize, Serialize};

pub mod transcript;

/// The vector directory.
pub const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/vectors");

/// The "RNG" of the vectors: one byte repeated. Python's `entropy_f=lambda n: bytes([b]) * n`
/// gives the same SPAKE2 scalar, because both reduce 64 bytes modulo the group order and a
/// repeated byte reads the same in either byte order (PGR/1 §12.3).
pub struct FixedRng(pub u8);

impl RngCore for FixedRng {
    fn next_u32(&mut self) -> u32 {
        u32::from_ne_bytes([self.0; 4])
    }
    fn next_u64(&mut self) -> u64 {
        u64::from_ne_bytes([self.0; 8])
    }
    fn fill_bytes(&mut self, dest: &mut [u8]) {
        dest.fill(self.0);
    }
    fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), rand_core::Error> {
        self.fill_bytes(dest);
        Ok(())
    }
}

impl CryptoRng for FixedRng {}

/// Decodes hex into a fixed array, panicking on a malformed vector.
pub fn arr<const N: usize>(text: &str) -> [u8; N] {
    let mut out = [0u8; N];
    hex::decode_to_slice(text, &mut out).unwrap_or_else(|e| panic!("bad hex {text:?}: {e}"));
    out
}

/// Decodes hex into bytes.
pub fn bytes(text: &str) -> Vec<u8> {
    hex::decode(text).unwrap_or_else(|e| panic!("bad hex {text:?}: {e}"))
}

/// Reads and parses one vector file.
pub fn load<T: for<'de> Deserialize<'de>>(name: &str) -> T {
    let path = format!("{DIR}/{name}");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// A vector file: what it is, then its cases.
#[derive(Serialize, Deserialize)]
pub struct File<T> {
    pub description: String,
    pub cases: Vec<T>,
}

/// `normalisation.json`.
#[derive(Serialize, Deserialize)]
pub struct NormalisationCase {
    /// Readable form of the input (JSON escapes); `input_hex` is authoritative.
    pub comment: String,
    pub input_hex: String,
    /// Output of the §2.3 pipeline, valid code or not.
    pub normalised_hex: String,
    /// `true` when §2.4 accepts it.
    pub valid: bool,
    /// `en` or `fr` for a valid code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub language: Option<String>,
    /// Error kind for an invalid code: `too-long`, `empty`, `wrong-word-count`,
    /// `unknown-word`, `mixed-lists`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// 1-based word position for `unknown-word` and `mixed-lists`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub position: Option<usize>,
}

/// `argon2id.json`.
#[derive(Serialize, Deserialize)]
pub struct Argon2Case {
    pub normalised_hex: String,
    pub room_id: String,
    pub m_kib: u32,
    pub t: u32,
    pub p: u32,
    pub password: String,
}

/// `spake2.json`.
#[derive(Serialize, Deserialize)]
pub struct Spake2Case {
    pub pw: String,
    pub id_a: String,
    pub id_b: String,
    /// The repeated byte side A's RNG gave.
    pub rng_byte_a: u8,
    /// The repeated byte side B's RNG gave.
    pub rng_byte_b: u8,
    pub msg_a: String,
    pub msg_b: String,
    pub key: String,
}

/// `key_schedule.json`.
#[derive(Serialize, Deserialize)]
pub struct KeyScheduleCase {
    pub client_hello: String,
    pub server_hello: String,
    pub k: String,
    pub th: String,
    pub prk: String,
    pub sf: String,
    pub cf: String,
    pub exporter: String,
    pub ts_c2s: String,
    pub ts_s2c: String,
    pub key_c2s: String,
    pub iv_c2s: String,
    pub key_s2c: String,
    pub iv_s2c: String,
    /// `ts_c2s` after one and two KEY_UPDATEs.
    pub ts_c2s_updates: [String; 2],
    /// `ts_s2c` after one and two KEY_UPDATEs.
    pub ts_s2c_updates: [String; 2],
}

/// `records.json`: a positive case has `record_type`/`body`, a negative one `error`.
#[derive(Serialize, Deserialize)]
pub struct RecordCase {
    pub name: String,
    pub key: String,
    pub iv: String,
    /// 1 = c2s, 2 = s2c.
    pub dir: u8,
    pub seq: u64,
    pub wire: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub record_type: Option<u8>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    /// `decrypt`, `too-short`, `length-mismatch`, `unknown-type`, `bad-key-update`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// `node_auth.json`.
#[derive(Serialize, Deserialize)]
pub struct NodeAuthCase {
    pub seed: String,
    pub th: String,
    /// 1 = client, 2 = server.
    pub role: u8,
    pub public_key: String,
    pub node_id: String,
    pub signed_message: String,
    pub signature: String,
    /// The NODE_AUTH body: public key ‖ signature.
    pub body: String,
    /// §5.4 fingerprint words, space-separated.
    pub fingerprint: String,
}

/// `transcript.json`: one whole connection.
#[derive(Serialize, Deserialize)]
pub struct TranscriptCase {
    /// The room code as typed; its normalised form is the Argon2id input.
    pub code_typed: String,
    pub room_id: String,
    pub epoch: u32,
    pub password: String,
    pub client_rng_byte: u8,
    pub server_rng_byte: u8,
    pub client_node_seed: String,
    pub server_node_seed: String,
    pub client_hello: String,
    /// ServerHello ‖ ServerFinished.
    pub server_flight: String,
    pub client_finished: String,
    pub th: String,
    pub exporter: String,
    /// The records after the handshake, in the order sent.
    pub records: Vec<TranscriptRecord>,
}

/// One record of a transcript.
#[derive(Serialize, Deserialize)]
pub struct TranscriptRecord {
    /// `client` or `server`.
    pub from: String,
    pub record_type: u8,
    pub body: String,
    pub wire: String,
}
