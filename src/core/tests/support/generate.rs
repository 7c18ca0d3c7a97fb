// SPDX-License-Identifier: GPL-3.0-or-later
//! The fixed inputs of every vector file and how their outputs are computed.

use aes_gcm::aead::{AeadInPlace, KeyInit};
use aes_gcm::{Aes256Gcm, Nonce};
use partagpu_core::protocol::hello::{spake2_identities, ClientHello, ServerHello};
use partagpu_core::protocol::keys::{transcript_hash, KeySchedule};
use partagpu_core::protocol::record::{aad, nonce};
use partagpu_core::protocol::Direction;
use partagpu_core::room::{normalise, RoomCode, RoomId, RoomPassword};
use spake2::{Ed25519Group, Identity, Password, Spake2};

use crate::support::*;

/// The normalisation inputs: a readable comment and the input.
pub const NORMALISATION_INPUTS: &[(&str, &str)] = &[
    ("plain English code", "abandon ability able about"),
    (
        "mixed case, tab, runs of _ and -, outer spaces",
        "  Abandon\tABILITY__able--about  ",
    ),
    (
        "full-width letters (NFKC)",
        "\u{FF21}\u{FF22}\u{FF21}\u{FF2E}\u{FF24}\u{FF2F}\u{FF2E} ability able about",
    ),
    ("circled letters (NFKC)", "\u{24E9}\u{24DE}\u{24DE} zoo zoo zoo"),
    (
        "ligature fi (NFKC)",
        "\u{FB01}lm \u{FB01}nal \u{FB01}nd \u{FB01}ne",
    ),
    (
        "ideographic space, no-break space, newline",
        "zoo\u{3000}zebra\u{A0}wrist\nabandon",
    ),
    (
        "full-width hyphen and low line (NFKC)",
        "zoo\u{FF0D}zoo\u{FF3F}zoo zoo",
    ),
    (
        "French, composed accents, upper case",
        "\u{C9}l\u{E8}ve \u{C9}L\u{C8}VE z\u{E9}nith abaisser",
    ),
    (
        "French, decomposed accents (NFD as in the published list)",
        "e\u{301}le\u{300}ve ze\u{301}nith abaisser zeste",
    ),
    ("French without accents", "eleve zenith abaisser zeste"),
    (
        "accent on an English word folds away",
        "zo\u{F6} zo\u{D4} zoo zoo",
    ),
    (
        "only words shared by both lists: English",
        "abandon animal badge bonus",
    ),
    ("empty", ""),
    ("separators only", " -_\t "),
    ("three words", "abandon ability able"),
    ("five words", "abandon ability able about above"),
    ("typo in word 2", "abandon abilty able about"),
    (
        "word outside the fold table (n tilde) in word 4",
        "abandon ability able \u{F1}andu",
    ),
    (
        "oe and ae ligatures fold but are no words",
        "\u{152}uvre \u{C6}ther zoo zoo",
    ),
    ("English then French-only word", "zoo abandon abaisser zoo"),
    (
        "U+2010 hyphen is not a separator",
        "abandon\u{2010}ability able about",
    ),
    (
        "zero-width space is not a separator",
        "abandon\u{200B}ability able about",
    ),
    (
        "U+001F is not White_Space (unlike Python's str.isspace)",
        "abandon\u{1F}ability able about",
    ),
    (
        "U+2003 em space and U+0085 next line are separators",
        "abandon\u{2003}ability\u{85}able about",
    ),
];

pub fn normalisation() -> Vec<NormalisationCase> {
    let too_long = "a ".repeat(129);
    let mut inputs: Vec<(String, String)> = NORMALISATION_INPUTS
        .iter()
        .map(|(c, i)| ((*c).to_owned(), (*i).to_owned()))
        .collect();
    inputs.push(("258 bytes: longer than 256".to_owned(), too_long));
    inputs
        .into_iter()
        .map(|(comment, input)| {
            let parsed = RoomCode::parse(&input);
            NormalisationCase {
                comment: format!("{comment}: {input:?}"),
                input_hex: hex::encode(input.as_bytes()),
                normalised_hex: hex::encode(normalise(&input).as_bytes()),
                valid: parsed.is_ok(),
                language: parsed.as_ref().ok().map(|c| c.language().tag().to_owned()),
                error: parsed.as_ref().err().map(|e| e.kind().to_owned()),
                position: parsed.as_ref().err().and_then(|e| e.position()),
            }
        })
        .collect()
}

pub fn argon2id() -> Vec<Argon2Case> {
    let inputs = [
        (
            "abandon ability able about",
            RoomId::from_bytes(std::array::from_fn(|i| i as u8)),
        ),
        (
            "\u{C9}l\u{E8}ve z\u{E9}nith abaisser zeste",
            RoomId::from_bytes([0xA5; 16]),
        ),
        ("zoo zebra wrist abandon", RoomId::from_bytes([0xFF; 16])),
    ];
    inputs
        .into_iter()
        .map(|(typed, room_id)| {
            let code = RoomCode::parse(typed).expect("fixed codes are valid");
            Argon2Case {
                normalised_hex: hex::encode(code.normalised_bytes()),
                room_id: room_id.to_hex(),
                m_kib: 19_456,
                t: 2,
                p: 1,
                password: hex::encode(RoomPassword::derive(&code, &room_id).expose_secret()),
            }
        })
        .collect()
}

/// Inputs of one SPAKE2 (and key schedule) vector.
struct Spake2Input {
    pw: [u8; 32],
    room: [u8; 16],
    epoch: u32,
    byte_a: u8,
    byte_b: u8,
}

const SPAKE2_INPUTS: [Spake2Input; 2] = [
    Spake2Input {
        pw: [0x01; 32],
        room: [0x5C; 16],
        epoch: 0,
        byte_a: 0x11,
        byte_b: 0x22,
    },
    Spake2Input {
        pw: [0x7E; 32],
        room: [0x00; 16],
        epoch: 0xDEAD_BEEF,
        byte_a: 0x33,
        byte_b: 0x44,
    },
];

pub fn spake2() -> Vec<Spake2Case> {
    SPAKE2_INPUTS
        .iter()
        .map(
            |&Spake2Input {
                 pw,
                 room,
                 epoch,
                 byte_a,
                 byte_b,
             }| {
                let (id_a, id_b) = spake2_identities(&RoomId::from_bytes(room), epoch);
                let (pw_, ia, ib) = (Password::new(pw), Identity::new(&id_a), Identity::new(&id_b));
                let (a, msg_a) = Spake2::<Ed25519Group>::start_a_with_rng(&pw_, &ia, &ib, FixedRng(byte_a));
                let (b, msg_b) = Spake2::<Ed25519Group>::start_b_with_rng(&pw_, &ia, &ib, FixedRng(byte_b));
                let key_a = a.finish(&msg_b).expect("honest messages");
                let key_b = b.finish(&msg_a).expect("honest messages");
                assert_eq!(key_a, key_b);
                Spake2Case {
                    pw: hex::encode(pw),
                    id_a: hex::encode(id_a),
                    id_b: hex::encode(id_b),
                    rng_byte_a: byte_a,
                    rng_byte_b: byte_b,
                    msg_a: hex::encode(msg_a),
                    msg_b: hex::encode(msg_b),
                    key: hex::encode(key_a),
                }
            },
        )
        .collect()
}

pub fn key_schedule() -> Vec<KeyScheduleCase> {
    spake2()
        .iter()
        .zip(SPAKE2_INPUTS)
        .map(|(case, Spake2Input { room, .. })| {
            let ch = ClientHello {
                room_id: RoomId::from_bytes(room),
                spake2_msg: arr(&case.msg_a),
            }
            .encode();
            let sh = ServerHello {
                spake2_msg: arr(&case.msg_b),
            }
            .encode();
            let ks = KeySchedule::new(&bytes(&case.key), transcript_hash(&ch, &sh));
            let sf = ks.server_finished();
            let c2s = ks.traffic_secret(Direction::ClientToServer);
            let s2c = ks.traffic_secret(Direction::ServerToClient);
            let h = |b: &[u8]| hex::encode(b);
            KeyScheduleCase {
                client_hello: h(&ch[..]),
                server_hello: h(&sh[..]),
                k: case.key.clone(),
                th: h(&ks.transcript_hash()[..]),
                prk: h(&ks.expose_prk()[..]),
                sf: h(&sf[..]),
                cf: h(&ks.client_finished(&sf)[..]),
                exporter: h(&ks.exporter()[..]),
                ts_c2s: h(&c2s.expose_secret()[..]),
                ts_s2c: h(&s2c.expose_secret()[..]),
                key_c2s: h(&c2s.key()[..]),
                iv_c2s: h(&c2s.iv()[..]),
                key_s2c: h(&s2c.key()[..]),
                iv_s2c: h(&s2c.iv()[..]),
                ts_c2s_updates: [
                    h(&c2s.next().expose_secret()[..]),
                    h(&c2s.next().next().expose_secret()[..]),
                ],
                ts_s2c_updates: [
                    h(&s2c.next().expose_secret()[..]),
                    h(&s2c.next().next().expose_secret()[..]),
                ],
            }
        })
        .collect()
}

/// Encrypts any plaintext as a record, for negative vectors the library refuses to produce.
pub fn raw_record(key: &[u8; 32], iv: &[u8; 12], dir: Direction, seq: u64, plaintext: &[u8]) -> Vec<u8> {
    let len = u16::try_from(plaintext.len() + 16).expect("small");
    let mut buf = plaintext.to_vec();
    let tag = Aes256Gcm::new(key.into())
        .encrypt_in_place_detached(Nonce::from_slice(&nonce(iv, seq)), &aad(dir, len), &mut buf)
        .expect("small record");
    [&len.to_be_bytes()[..], &buf, &tag].concat()
}
