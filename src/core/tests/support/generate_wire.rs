// SPDX-License-Identifier: GPL-3.0-or-later
//! Fixed inputs of the record, NODE_AUTH and transcript vectors.

use partagpu_core::protocol::node_auth::signed_message;
use partagpu_core::protocol::record::seal_record;
use partagpu_core::protocol::{Direction, NodeIdentity, RecordType, Role};
use partagpu_core::room::fingerprint;

use crate::generate::raw_record;
use crate::support::transcript::{run, TranscriptInputs};
use crate::support::*;

const KEY: [u8; 32] = [
    0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f, 0x10,
    0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18, 0x19, 0x1a, 0x1b, 0x1c, 0x1d, 0x1e, 0x1f,
];
const IV: [u8; 12] = [
    0xa0, 0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7, 0xa8, 0xa9, 0xaa, 0xab,
];

fn positive(name: &str, dir: Direction, seq: u64, record_type: RecordType, body: &[u8]) -> RecordCase {
    RecordCase {
        name: name.to_owned(),
        key: hex::encode(KEY),
        iv: hex::encode(IV),
        dir: dir.byte(),
        seq,
        wire: hex::encode(seal_record(&KEY, &IV, dir, seq, record_type, body).expect("fits")),
        record_type: Some(record_type.byte()),
        body: Some(hex::encode(body)),
        error: None,
    }
}

fn negative(name: &str, dir: Direction, seq: u64, wire: Vec<u8>, error: &str) -> RecordCase {
    RecordCase {
        name: name.to_owned(),
        key: hex::encode(KEY),
        iv: hex::encode(IV),
        dir: dir.byte(),
        seq,
        wire: hex::encode(wire),
        record_type: None,
        body: None,
        error: Some(error.to_owned()),
    }
}

pub fn records() -> Vec<RecordCase> {
    use Direction::{ClientToServer as C2S, ServerToClient as S2C};
    let json = br#"{"purpose":"control","versions":[1],"caps":[]}"#;
    let big: Vec<u8> = (0..1000u32).map(|i| (i % 251) as u8).collect();
    let mut cases = vec![
        positive("ping, empty body, seq 0", C2S, 0, RecordType::Ping, b""),
        positive("hello JSON, seq 1", C2S, 1, RecordType::Hello, json),
        positive("pong s2c, seq 0", S2C, 0, RecordType::Pong, b""),
        positive("data 1000 bytes, s2c, seq 7", S2C, 7, RecordType::Data, &big),
        positive("key update, seq 5", C2S, 5, RecordType::KeyUpdate, b""),
        positive(
            "key update at the key's last seq (2^32 - 1)",
            S2C,
            0xFFFF_FFFF,
            RecordType::KeyUpdate,
            b"",
        ),
        positive(
            "request, seq 2^32 - 2",
            C2S,
            0xFFFF_FFFE,
            RecordType::Request,
            b"{}",
        ),
        positive("close with a reason", S2C, 2, RecordType::Close, b"shutting down"),
    ];
    let good = seal_record(&KEY, &IV, C2S, 3, RecordType::Ping, b"ping").expect("fits");
    let mut flipped_tag = good.clone();
    *flipped_tag.last_mut().expect("non-empty") ^= 0x80;
    let mut flipped_ct = good.clone();
    flipped_ct[3] ^= 0x01;
    let mut flipped_type = good.clone();
    flipped_type[2] ^= 0x01;
    let mut len_plus = good.clone();
    len_plus[1] += 1;
    let mut len_minus = good.clone();
    len_minus[1] -= 1;
    let mut short = vec![0x00, 0x10];
    short.extend_from_slice(&[0u8; 16]);
    cases.extend([
        negative("flipped tag bit", C2S, 3, flipped_tag, "decrypt"),
        negative("flipped ciphertext bit", C2S, 3, flipped_ct, "decrypt"),
        negative("flipped encrypted type bit", C2S, 3, flipped_type, "decrypt"),
        negative(
            "wrong seq (record of seq 3 opened at 4)",
            C2S,
            4,
            good.clone(),
            "decrypt",
        ),
        negative(
            "replay at the next seq (opened at 2)",
            C2S,
            2,
            good.clone(),
            "decrypt",
        ),
        negative(
            "wrong dir (c2s record opened as s2c)",
            S2C,
            3,
            good.clone(),
            "decrypt",
        ),
        negative(
            "len field one more than the bytes",
            C2S,
            3,
            len_plus,
            "length-mismatch",
        ),
        negative(
            "len field one less than the bytes",
            C2S,
            3,
            len_minus,
            "length-mismatch",
        ),
        negative(
            "truncated by one byte",
            C2S,
            3,
            good[..good.len() - 1].to_vec(),
            "length-mismatch",
        ),
        negative("len 16 < 17", C2S, 3, short, "too-short"),
        negative("only a header", C2S, 3, vec![0x00, 0x11], "length-mismatch"),
        negative(
            "unknown type 0x03",
            C2S,
            3,
            raw_record(&KEY, &IV, C2S, 3, b"\x03x"),
            "unknown-type",
        ),
        negative(
            "key update with a body",
            C2S,
            3,
            raw_record(&KEY, &IV, C2S, 3, b"\x50\x00"),
            "bad-key-update",
        ),
    ]);
    cases
}

/// The RFC 8032 §7.1 TEST 1 seed, and a seed of repeated bytes.
const SEEDS: [&str; 2] = [
    "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
    "c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1",
];

pub fn node_auth() -> Vec<NodeAuthCase> {
    let th: [u8; 32] = std::array::from_fn(|i| (0x40 + i) as u8);
    let mut cases = Vec::new();
    for seed in SEEDS {
        for role in [Role::Client, Role::Server] {
            let node = NodeIdentity::from_seed(&arr(seed));
            let auth = node.sign(role, &th);
            cases.push(NodeAuthCase {
                seed: seed.to_owned(),
                th: hex::encode(th),
                role: role.byte(),
                public_key: hex::encode(node.public_key()),
                node_id: node.node_id().to_hex(),
                signed_message: hex::encode(signed_message(role, &th)),
                signature: hex::encode(auth.signature),
                body: hex::encode(auth.encode()),
                fingerprint: fingerprint(&node.public_key()),
            });
        }
    }
    cases
}

pub fn transcript() -> Vec<TranscriptCase> {
    vec![run(&TranscriptInputs::fixed())]
}
