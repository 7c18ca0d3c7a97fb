// SPDX-License-Identifier: GPL-3.0-or-later
//! What the PGR/1 fuzz targets share: a fixed "RNG", the known-answer vectors they start
//! from, a cursor over the fuzzer's bytes, and independent readings of the spec
//! (`docs/protocol.md` §3.1 and §6) that partagpu-core's answers are compared against.
//!
//! The reference code here is written from the spec, not from partagpu-core, so that a target
//! checks "the parser does what §3/§6 say" and not only "the parser does not panic".

#![forbid(unsafe_code)]

use std::sync::LazyLock;

use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::{Aes256Gcm, Nonce};
use partagpu_core::protocol::{HelloError, RecordError, RecordType, Role};
use partagpu_core::room::{RoomId, RoomPassword};
use rand_core::{CryptoRng, RngCore};
use serde_json::Value;

/// A deterministic "RNG" that outputs one byte forever: with the byte of the transcript
/// vector, the handshake state machines reproduce its exact wire bytes. Fuzzing only.
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

fn hex_field(case: &Value, key: &str) -> Vec<u8> {
    let text = case[key]
        .as_str()
        .unwrap_or_else(|| panic!("vector field {key} is not a string"));
    hex::decode(text).unwrap_or_else(|_| panic!("vector field {key} is not hex"))
}

fn array<const N: usize>(bytes: &[u8]) -> [u8; N] {
    bytes.try_into().expect("vector field of the wrong length")
}

fn cases(json: &str) -> Vec<Value> {
    let mut doc: Value = serde_json::from_str(json).expect("vector file is JSON");
    match doc["cases"].take() {
        Value::Array(cases) => cases,
        _ => panic!("vector file has no cases"),
    }
}

/// The whole-connection vector of `src/core/tests/vectors/transcript.json` (PGR/1 §12.7).
pub struct Transcript {
    /// The room both ends are in.
    pub room_id: RoomId,
    /// Its epoch.
    pub epoch: u32,
    /// Its Argon2id password (given, so that no target pays for Argon2id).
    pub password: [u8; 32],
    /// Byte of the client's [`FixedRng`].
    pub client_rng_byte: u8,
    /// Byte of the server's [`FixedRng`].
    pub server_rng_byte: u8,
    /// The 57-byte ClientHello.
    pub client_hello: Vec<u8>,
    /// The 73-byte server flight.
    pub server_flight: Vec<u8>,
    /// The 32-byte ClientFinished.
    pub client_finished: Vec<u8>,
    /// TH.
    pub th: [u8; 32],
}

impl Transcript {
    /// The room's password, as the server's lookup returns it.
    #[must_use]
    pub fn room_password(&self) -> RoomPassword {
        RoomPassword::from_bytes(self.password)
    }
}

static TRANSCRIPT: LazyLock<Transcript> = LazyLock::new(|| {
    let case = &cases(include_str!("../../src/core/tests/vectors/transcript.json"))[0];
    let byte = |key: &str| u8::try_from(case[key].as_u64().expect("a number")).expect("a byte");
    Transcript {
        room_id: RoomId::from_bytes(array(&hex_field(case, "room_id"))),
        epoch: u32::try_from(case["epoch"].as_u64().expect("a number")).expect("a u32"),
        password: array(&hex_field(case, "password")),
        client_rng_byte: byte("client_rng_byte"),
        server_rng_byte: byte("server_rng_byte"),
        client_hello: hex_field(case, "client_hello"),
        server_flight: hex_field(case, "server_flight"),
        client_finished: hex_field(case, "client_finished"),
        th: array(&hex_field(case, "th")),
    }
});

/// The transcript vector, parsed once.
#[must_use]
pub fn transcript() -> &'static Transcript {
    &TRANSCRIPT
}

/// One case of `node_auth.json` (PGR/1 §12.6).
pub struct NodeAuthVector {
    /// The signer's role.
    pub role: Role,
    /// The signed TH.
    pub th: [u8; 32],
    /// The 96-byte body: `node_pub ‖ sig`.
    pub body: Vec<u8>,
}

static NODE_AUTH: LazyLock<Vec<NodeAuthVector>> = LazyLock::new(|| {
    cases(include_str!("../../src/core/tests/vectors/node_auth.json"))
        .iter()
        .map(|case| NodeAuthVector {
            role: role_of_byte(u8::try_from(case["role"].as_u64().expect("a number")).expect("a byte")),
            th: array(&hex_field(case, "th")),
            body: hex_field(case, "body"),
        })
        .collect()
});

/// The NODE_AUTH vectors, parsed once.
#[must_use]
pub fn node_auth_vectors() -> &'static [NodeAuthVector] {
    &NODE_AUTH
}

/// The role of a §5.2 role byte; any other byte is taken by its parity, so every fuzz byte
/// means something.
#[must_use]
pub fn role_of_byte(byte: u8) -> Role {
    if byte & 1 == 1 {
        Role::Client
    } else {
        Role::Server
    }
}

/// The key and IV shared by every case of `records.json` (PGR/1 §12.5).
pub const RECORD_VECTOR_KEY: [u8; 32] = [
    0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f, 0x10,
    0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18, 0x19, 0x1a, 0x1b, 0x1c, 0x1d, 0x1e, 0x1f,
];
/// See [`RECORD_VECTOR_KEY`].
pub const RECORD_VECTOR_IV: [u8; 12] = [
    0xa0, 0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7, 0xa8, 0xa9, 0xaa, 0xab,
];

/// A cursor over the fuzzer's bytes that never fails: past the end it reads zeros and
/// empty slices, so every input is a valid program for a target.
pub struct Input<'a> {
    rest: &'a [u8],
}

impl<'a> Input<'a> {
    /// Reads `data` from the start.
    #[must_use]
    pub fn new(data: &'a [u8]) -> Self {
        Self { rest: data }
    }

    /// Whether everything was read.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.rest.is_empty()
    }

    /// Up to `n` bytes (fewer at the end).
    pub fn take(&mut self, n: usize) -> &'a [u8] {
        let (head, tail) = self.rest.split_at(n.min(self.rest.len()));
        self.rest = tail;
        head
    }

    /// Everything not read yet.
    pub fn rest(&mut self) -> &'a [u8] {
        self.take(self.rest.len())
    }

    /// One byte, 0 at the end.
    pub fn u8(&mut self) -> u8 {
        self.take(1).first().copied().unwrap_or(0)
    }

    /// A big-endian u16, zero-padded at the end.
    pub fn u16(&mut self) -> u16 {
        let mut out = [0u8; 2];
        let got = self.take(2);
        out[..got.len()].copy_from_slice(got);
        u16::from_be_bytes(out)
    }

    /// A big-endian u64, zero-padded at the end.
    pub fn u64(&mut self) -> u64 {
        let mut out = [0u8; 8];
        let got = self.take(8);
        out[..got.len()].copy_from_slice(got);
        u64::from_be_bytes(out)
    }
}

// ---------------------------------------------------------------------------------------
// PGR/1 §3.1, read independently.

/// Bytes of a ClientHello and offset of its SPAKE2 message (§3.1).
pub const REF_CLIENT_HELLO: (usize, usize, u8) = (57, 24, b'A');
/// Bytes of a ServerHello and offset of its SPAKE2 message (§3.1).
pub const REF_SERVER_HELLO: (usize, usize, u8) = (41, 8, b'B');

/// What §3.1 says of a hello: the first failing check in the order size, magic, version,
/// suite, flags, SPAKE2 side tag. `shape` is [`REF_CLIENT_HELLO`] or [`REF_SERVER_HELLO`].
///
/// # Errors
/// The [`HelloError`] the spec implies.
pub fn reference_hello_check(bytes: &[u8], shape: (usize, usize, u8)) -> Result<(), HelloError> {
    let (len, spake_at, side) = shape;
    if bytes.len() != len {
        return Err(HelloError::WrongLength);
    }
    if &bytes[..4] != b"PGR1" {
        return Err(HelloError::BadMagic);
    }
    if bytes[4] != 1 {
        return Err(HelloError::BadVersion(bytes[4]));
    }
    if bytes[5] != 1 {
        return Err(HelloError::BadSuite(bytes[5]));
    }
    let flags = u16::from_be_bytes([bytes[6], bytes[7]]);
    if flags != 0 {
        return Err(HelloError::BadFlags(flags));
    }
    if bytes[spake_at] != side {
        return Err(HelloError::BadSpake2Side);
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// PGR/1 §6, read independently.

/// The record types of §6.4, by code.
const REF_TYPES: [u8; 12] = [
    0x01, 0x02, 0x10, 0x11, 0x20, 0x21, 0x30, 0x31, 0x40, 0x41, 0x50, 0x7F,
];
/// The KEY_UPDATE code (§6.4).
pub const REF_KEY_UPDATE: u8 = 0x50;
/// Largest body (§6.3).
pub const REF_MAX_BODY: usize = 65518;

/// An AES-256-GCM record key and IV used the way §6.2 says.
pub struct RefKeys {
    cipher: Aes256Gcm,
    iv: [u8; 12],
}

impl RefKeys {
    /// Keys from raw bytes.
    #[must_use]
    pub fn new(key: &[u8; 32], iv: &[u8; 12]) -> Self {
        Self {
            cipher: Aes256Gcm::new(key.into()),
            iv: *iv,
        }
    }

    fn nonce(&self, seq: u64) -> [u8; 12] {
        let mut nonce = self.iv;
        for (byte, s) in nonce[4..].iter_mut().zip(seq.to_be_bytes()) {
            *byte ^= s;
        }
        nonce
    }

    /// `len ‖ AES-GCM(type ‖ body)` for ANY type byte and a body of at most 65518 bytes: this
    /// can forge what partagpu-core's sealer refuses to make (unknown types, a KEY_UPDATE with
    /// a body), so the opener's refusals of authentic-but-invalid records get exercised.
    #[must_use]
    pub fn seal(&self, dir: u8, seq: u64, type_byte: u8, body: &[u8]) -> Vec<u8> {
        assert!(body.len() <= REF_MAX_BODY, "the caller clamps bodies");
        let len = u16::try_from(1 + body.len() + 16).expect("clamped");
        let len_be = len.to_be_bytes();
        let aad = [b'P', b'G', b'R', b'1', dir, len_be[0], len_be[1]];
        let mut plaintext = Vec::with_capacity(1 + body.len());
        plaintext.push(type_byte);
        plaintext.extend_from_slice(body);
        let sealed = self
            .cipher
            .encrypt(
                Nonce::from_slice(&self.nonce(seq)),
                Payload {
                    msg: &plaintext,
                    aad: &aad,
                },
            )
            .expect("AES-GCM seals any short message");
        [&len_be[..], &sealed].concat()
    }

    /// What §6.1–§6.5 say of one whole record opened at (`dir`, `seq`): the type byte and
    /// body, or the error, checked in the order framing, authentication, type, KEY_UPDATE body.
    ///
    /// # Errors
    /// The [`RecordError`] the spec implies.
    pub fn open(&self, dir: u8, seq: u64, wire: &[u8]) -> Result<(RecordType, Vec<u8>), RecordError> {
        if wire.len() < 2 {
            return Err(RecordError::TooShort);
        }
        let len = usize::from(u16::from_be_bytes([wire[0], wire[1]]));
        if len < 17 {
            return Err(RecordError::TooShort);
        }
        if wire.len() != 2 + len {
            return Err(RecordError::LengthMismatch);
        }
        let aad = [b'P', b'G', b'R', b'1', dir, wire[0], wire[1]];
        let plaintext = self
            .cipher
            .decrypt(
                Nonce::from_slice(&self.nonce(seq)),
                Payload {
                    msg: &wire[2..],
                    aad: &aad,
                },
            )
            .map_err(|_| RecordError::Decrypt)?;
        let type_byte = plaintext[0];
        if !REF_TYPES.contains(&type_byte) {
            return Err(RecordError::UnknownType(type_byte));
        }
        if type_byte == REF_KEY_UPDATE && plaintext.len() > 1 {
            return Err(RecordError::BadKeyUpdate);
        }
        let record_type = RecordType::from_byte(type_byte).expect("a §6.4 type");
        assert_eq!(record_type.byte(), type_byte, "RecordType codes are §6.4's");
        Ok((record_type, plaintext[1..].to_vec()))
    }
}
