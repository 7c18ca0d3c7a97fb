// SPDX-License-Identifier: GPL-3.0-or-later
//! Checks the implementation against the committed vectors (`tests/vectors/*.json`), the
//! data the Python implementation checks too (PGR/1 §12).

mod support;

use partagpu_core::protocol::hello::{spake2_identities, ClientHello, ServerHello};
use partagpu_core::protocol::keys::{transcript_hash, KeySchedule, TrafficSecret};
use partagpu_core::protocol::node_auth::signed_message;
use partagpu_core::protocol::record::{open_record, seal_record};
use partagpu_core::protocol::{Direction, NodeAuth, NodeIdentity, RecordType, Role};
use partagpu_core::room::{fingerprint, normalise, RoomCode, RoomId, RoomPassword};
use spake2::{Ed25519Group, Identity, Password, Spake2};
use support::transcript::{run, TranscriptInputs};
use support::*;

fn direction(byte: u8) -> Direction {
    match byte {
        1 => Direction::ClientToServer,
        2 => Direction::ServerToClient,
        other => panic!("bad dir {other}"),
    }
}

fn role(byte: u8) -> Role {
    match byte {
        1 => Role::Client,
        2 => Role::Server,
        other => panic!("bad role {other}"),
    }
}

#[test]
fn normalisation() {
    let file: File<NormalisationCase> = load("normalisation.json");
    assert!(file.cases.len() >= 20);
    for case in &file.cases {
        let input = String::from_utf8(bytes(&case.input_hex)).expect("UTF-8 input");
        assert_eq!(
            hex::encode(normalise(&input).as_bytes()),
            case.normalised_hex,
            "{}",
            case.comment
        );
        match RoomCode::parse(&input) {
            Ok(code) => {
                assert!(case.valid, "{}", case.comment);
                assert_eq!(
                    Some(code.language().tag()),
                    case.language.as_deref(),
                    "{}",
                    case.comment
                );
                assert_eq!(hex::encode(code.normalised_bytes()), case.normalised_hex);
            }
            Err(err) => {
                assert!(!case.valid, "{}: {err}", case.comment);
                assert_eq!(Some(err.kind()), case.error.as_deref(), "{}", case.comment);
                assert_eq!(err.position(), case.position, "{}", case.comment);
            }
        }
    }
}

#[test]
fn argon2id() {
    let file: File<Argon2Case> = load("argon2id.json");
    for case in &file.cases {
        assert_eq!((case.m_kib, case.t, case.p), (19_456, 2, 1));
        let typed = String::from_utf8(bytes(&case.normalised_hex)).expect("ASCII");
        let code = RoomCode::parse(&typed).expect("valid code");
        let room_id = RoomId::from_hex(&case.room_id).expect("hex id");
        let password = RoomPassword::derive(&code, &room_id);
        assert_eq!(hex::encode(password.expose_secret()), case.password);
    }
}

#[test]
fn spake2() {
    let file: File<Spake2Case> = load("spake2.json");
    for case in &file.cases {
        let (pw, id_a, id_b) = (
            Password::new(bytes(&case.pw)),
            bytes(&case.id_a),
            bytes(&case.id_b),
        );
        let (ia, ib) = (Identity::new(&id_a), Identity::new(&id_b));
        let (a, msg_a) = Spake2::<Ed25519Group>::start_a_with_rng(&pw, &ia, &ib, FixedRng(case.rng_byte_a));
        let (b, msg_b) = Spake2::<Ed25519Group>::start_b_with_rng(&pw, &ia, &ib, FixedRng(case.rng_byte_b));
        assert_eq!(hex::encode(&msg_a), case.msg_a);
        assert_eq!(hex::encode(&msg_b), case.msg_b);
        // Each side derives K from the other side's recorded message.
        assert_eq!(hex::encode(a.finish(&bytes(&case.msg_b)).unwrap()), case.key);
        assert_eq!(hex::encode(b.finish(&bytes(&case.msg_a)).unwrap()), case.key);
        // The identities are the §3.3 ones.
        let room = RoomId::from_bytes(arr(&case.id_a[14..46]));
        let epoch = u32::from_str_radix(&case.id_a[46..], 16).unwrap();
        let (ea, eb) = spake2_identities(&room, epoch);
        assert_eq!((ea.to_vec(), eb.to_vec()), (id_a, id_b));
    }
}

#[test]
fn key_schedule() {
    let file: File<KeyScheduleCase> = load("key_schedule.json");
    for c in &file.cases {
        let ch = ClientHello::parse(&bytes(&c.client_hello))
            .expect("valid hello")
            .encode();
        let sh = ServerHello::parse(&bytes(&c.server_hello))
            .expect("valid hello")
            .encode();
        let ks = KeySchedule::new(&bytes(&c.k), transcript_hash(&ch, &sh));
        let h = |b: &[u8]| hex::encode(b);
        assert_eq!(h(ks.transcript_hash()), c.th);
        assert_eq!(h(ks.expose_prk()), c.prk);
        let sf = ks.server_finished();
        assert_eq!(h(&sf), c.sf);
        assert_eq!(h(&ks.client_finished(&sf)), c.cf);
        assert!(ks.verify_server_finished(&bytes(&c.sf)).is_ok());
        assert!(ks.verify_client_finished(&sf, &bytes(&c.cf)).is_ok());
        assert_eq!(h(&ks.exporter()[..]), c.exporter);
        for (dir, ts, key, iv, updates) in [
            (
                Direction::ClientToServer,
                &c.ts_c2s,
                &c.key_c2s,
                &c.iv_c2s,
                &c.ts_c2s_updates,
            ),
            (
                Direction::ServerToClient,
                &c.ts_s2c,
                &c.key_s2c,
                &c.iv_s2c,
                &c.ts_s2c_updates,
            ),
        ] {
            let secret = ks.traffic_secret(dir);
            assert_eq!(h(secret.expose_secret()), *ts);
            assert_eq!(h(&secret.key()[..]), *key);
            assert_eq!(h(&secret.iv()[..]), *iv);
            let one = secret.next();
            assert_eq!(h(one.expose_secret()), updates[0]);
            assert_eq!(h(one.next().expose_secret()), updates[1]);
            let again = TrafficSecret::from_bytes(arr(ts)).next();
            assert_eq!(again.expose_secret(), one.expose_secret());
        }
    }
}

#[test]
fn records() {
    let file: File<RecordCase> = load("records.json");
    let (mut positive, mut negative) = (0, 0);
    for c in &file.cases {
        let (key, iv, dir, wire) = (arr(&c.key), arr(&c.iv), direction(c.dir), bytes(&c.wire));
        let opened = open_record(&key, &iv, dir, c.seq, &wire);
        match (&c.error, c.record_type) {
            (None, Some(type_byte)) => {
                positive += 1;
                let record_type = RecordType::from_byte(type_byte).expect("known type");
                let body = bytes(c.body.as_deref().expect("positive cases have a body"));
                let sealed = seal_record(&key, &iv, dir, c.seq, record_type, &body).unwrap();
                assert_eq!(hex::encode(sealed), c.wire, "{}", c.name);
                let record = opened.unwrap_or_else(|e| panic!("{}: {e}", c.name));
                assert_eq!(
                    (record.record_type, record.body),
                    (record_type, body),
                    "{}",
                    c.name
                );
            }
            (Some(kind), _) => {
                negative += 1;
                let err = opened.expect_err(&c.name);
                assert_eq!(err.kind(), kind, "{}", c.name);
            }
            _ => panic!("{}: a case is positive or negative", c.name),
        }
    }
    assert!(positive >= 5 && negative >= 10, "{positive} {negative}");
}

#[test]
fn node_auth() {
    let file: File<NodeAuthCase> = load("node_auth.json");
    for c in &file.cases {
        let node = NodeIdentity::from_seed(&arr(&c.seed));
        let th = arr(&c.th);
        let signer = role(c.role);
        assert_eq!(hex::encode(node.public_key()), c.public_key);
        assert_eq!(node.node_id().to_hex(), c.node_id);
        assert_eq!(hex::encode(signed_message(signer, &th)), c.signed_message);
        let auth = node.sign(signer, &th);
        assert_eq!(hex::encode(auth.signature), c.signature);
        assert_eq!(hex::encode(auth.encode()), c.body);
        let parsed = NodeAuth::parse(&bytes(&c.body)).unwrap();
        assert_eq!(parsed.verify(signer, &th).unwrap().node_id, node.node_id());
        assert!(parsed.verify(signer.peer(), &th).is_err());
        assert_eq!(fingerprint(&node.public_key()), c.fingerprint);
    }
}

#[test]
fn transcript() {
    let file: File<TranscriptCase> = load("transcript.json");
    for case in &file.cases {
        let replayed = run(&TranscriptInputs::from_case(case));
        let expected = serde_json::to_value(case).unwrap();
        let actual = serde_json::to_value(&replayed).unwrap();
        assert_eq!(actual, expected);
        assert_eq!(case.records[0].record_type, RecordType::NodeAuth.byte());
        assert_eq!(case.records[1].record_type, RecordType::NodeAuth.byte());
    }
}

#[test]
fn the_committed_vectors_are_what_the_generator_writes() {
    // The fixed transcript inputs still produce the committed file (guards both directions).
    let file: File<TranscriptCase> = load("transcript.json");
    let fresh = run(&TranscriptInputs::fixed());
    assert_eq!(
        serde_json::to_value(&fresh).unwrap(),
        serde_json::to_value(&file.cases[0]).unwrap()
    );
}
