// SPDX-License-Identifier: GPL-3.0-or-later
use aes_gcm::aead::{AeadInPlace, KeyInit};
use aes_gcm::{Aes256Gcm, Nonce};
use rand_core::{OsRng, RngCore};

use super::*;
use crate::protocol::keys::TrafficSecret;

const C2S: Direction = Direction::ClientToServer;
const S2C: Direction = Direction::ServerToClient;

fn pair(direction: Direction) -> (Sealer, Opener) {
    let secret = TrafficSecret::from_bytes([0x5A; 32]);
    (
        Sealer::new(direction, secret.clone()),
        Opener::new(direction, secret),
    )
}

#[test]
fn nonce_and_aad_layout() {
    let iv = [0xFF; 12];
    let n = nonce(&iv, 0x0102_0304_0506_0708);
    assert_eq!(&n[..4], &[0xFF; 4]);
    assert_eq!(&n[4..], &[0xFE, 0xFD, 0xFC, 0xFB, 0xFA, 0xF9, 0xF8, 0xF7]);
    assert_eq!(aad(S2C, 0x1234), *b"PGR1\x02\x12\x34");
}

#[test]
fn round_trips_random_bodies() {
    let (mut sealer, mut opener) = pair(C2S);
    for i in 0..200u64 {
        let len = match i {
            0 => 0,
            1 => MAX_BODY_LEN,
            _ => (OsRng.next_u32() as usize) % 3000,
        };
        let mut body = vec![0u8; len];
        OsRng.fill_bytes(&mut body);
        let record_type = RecordType::ALL[(i as usize) % 10];
        let wire = sealer.seal(record_type, &body).unwrap();
        assert_eq!(wire.len(), HEADER_LEN + 1 + len + TAG_LEN);
        assert_eq!(ciphertext_len([wire[0], wire[1]]), Ok(wire.len() - 2));
        let record = opener.open(&wire).unwrap();
        assert_eq!((record.record_type, record.body), (record_type, body));
    }
    assert_eq!((sealer.seq(), opener.seq()), (200, 200));
}

#[test]
fn body_size_limit() {
    let (mut sealer, _) = pair(C2S);
    assert_eq!(
        sealer.seal(RecordType::Data, &vec![0; MAX_BODY_LEN + 1]),
        Err(RecordError::BodyTooLong(MAX_BODY_LEN + 1))
    );
    assert_eq!(sealer.seq(), 0);
    assert_eq!(MAX_PLAINTEXT_LEN, 65519);
}

/// Every failure leaves the counter where it was, and the genuine next record still opens.
#[test]
fn tampered_replayed_reordered_and_reflected_records_fail_without_advancing() {
    let (mut sealer, mut opener) = pair(C2S);
    let first = sealer.seal(RecordType::Ping, b"one").unwrap();
    let second = sealer.seal(RecordType::Ping, b"two").unwrap();

    // Reordered: the second record first.
    assert_eq!(opener.open(&second), Err(RecordError::Decrypt));
    // Tampered: every single bit flip anywhere in the ciphertext or tag.
    for i in HEADER_LEN..first.len() {
        let mut bad = first.clone();
        bad[i] ^= 0x01;
        assert_eq!(opener.open(&bad), Err(RecordError::Decrypt), "byte {i}");
    }
    // Length header changed: mismatch, or shorter than a record.
    let mut bad = first.clone();
    bad[1] += 1;
    assert_eq!(opener.open(&bad), Err(RecordError::LengthMismatch));
    assert_eq!(
        opener.open(&first[..first.len() - 1]),
        Err(RecordError::LengthMismatch)
    );
    assert_eq!(opener.open(&[0, 16]), Err(RecordError::TooShort));
    assert_eq!(opener.open(&[0]), Err(RecordError::TooShort));
    assert_eq!(ciphertext_len([0, 16]), Err(RecordError::TooShort));
    // Reflected: the same bytes fed to the other direction's opener.
    let (_, mut other_way) = pair(S2C);
    assert_eq!(other_way.open(&first), Err(RecordError::Decrypt));
    assert_eq!(opener.seq(), 0);

    assert_eq!(opener.open(&first).unwrap().body, b"one");
    // Replayed.
    assert_eq!(opener.open(&first), Err(RecordError::Decrypt));
    assert_eq!(opener.seq(), 1);
    assert_eq!(opener.open(&second).unwrap().body, b"two");
}

#[test]
fn unknown_type_is_refused_after_authentication() {
    let secret = TrafficSecret::from_bytes([0x5A; 32]);
    let key = secret.key();
    let iv = secret.iv();
    let cipher = Aes256Gcm::new((&*key).into());
    let mut buf = vec![0x03, b'x'];
    let tag = cipher
        .encrypt_in_place_detached(Nonce::from_slice(&nonce(&iv, 0)), &aad(C2S, 18), &mut buf)
        .unwrap();
    let wire = [&[0u8, 18][..], &buf, &tag].concat();
    let mut opener = Opener::new(C2S, secret);
    assert_eq!(opener.open(&wire), Err(RecordError::UnknownType(0x03)));
    assert_eq!(opener.seq(), 0);
    for byte in 0..=255u8 {
        if let Some(t) = RecordType::from_byte(byte) {
            assert_eq!(t.byte(), byte);
        }
    }
}

#[test]
fn key_update_switches_both_sides_at_the_same_record() {
    let (mut sealer, mut opener) = pair(S2C);
    let before = sealer.seal(RecordType::Data, b"old key").unwrap();
    let update = sealer.seal_key_update().unwrap();
    assert_eq!((sealer.seq(), sealer.key_updates()), (0, 1));
    let after = sealer.seal(RecordType::Data, b"new key").unwrap();

    assert_eq!(opener.open(&before).unwrap().body, b"old key");
    // A record of the new key before the KEY_UPDATE is refused.
    assert_eq!(opener.open(&after), Err(RecordError::Decrypt));
    assert_eq!(opener.open(&update).unwrap().record_type, RecordType::KeyUpdate);
    assert_eq!((opener.seq(), opener.key_updates()), (0, 1));
    // The old key's records no longer open.
    assert_eq!(opener.open(&before), Err(RecordError::Decrypt));
    assert_eq!(opener.open(&after).unwrap().body, b"new key");

    assert_eq!(
        sealer.seal(RecordType::KeyUpdate, b"x"),
        Err(RecordError::BadKeyUpdate)
    );
}

#[test]
fn key_update_policy_and_hard_stop() {
    let (mut sealer, mut opener) = pair(C2S);
    assert!(!sealer.needs_key_update());
    sealer.set_seq_for_test(KEY_UPDATE_RECORDS);
    assert!(sealer.needs_key_update());

    let (mut sealer, _) = pair(C2S);
    for _ in 0..(KEY_UPDATE_BYTES / (MAX_BODY_LEN as u64 + 1)) {
        sealer.keys_bytes_for_test(MAX_BODY_LEN as u64 + 1);
    }
    assert!(!sealer.needs_key_update());
    sealer.keys_bytes_for_test(MAX_BODY_LEN as u64 + 1);
    assert!(sealer.needs_key_update());

    // The key's last slot (seq 2^32 − 1) takes only a KEY_UPDATE, on both sides.
    let (mut sealer, _) = pair(C2S);
    sealer.set_seq_for_test(MAX_RECORDS_PER_KEY - 1);
    assert_eq!(
        sealer.seal(RecordType::Ping, b""),
        Err(RecordError::KeyUpdateRequired)
    );
    let forged = seal_record(
        &TrafficSecret::from_bytes([0x5A; 32]).key(),
        &TrafficSecret::from_bytes([0x5A; 32]).iv(),
        C2S,
        MAX_RECORDS_PER_KEY - 1,
        RecordType::Ping,
        b"",
    )
    .unwrap();
    opener.set_seq_for_test(MAX_RECORDS_PER_KEY - 1);
    assert_eq!(opener.open(&forged), Err(RecordError::KeyUpdateRequired));
    let update = sealer.seal_key_update().unwrap();
    assert_eq!(opener.open(&update).unwrap().record_type, RecordType::KeyUpdate);
    assert_eq!(opener.seq(), 0);
}
