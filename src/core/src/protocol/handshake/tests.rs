// SPDX-License-Identifier: GPL-3.0-or-later
use rand_core::OsRng;

use super::*;
use crate::protocol::node_auth::NodeIdentity;
use crate::protocol::record::RecordType;

const ROOM: RoomId = RoomId::from_bytes([0x5C; 16]);

fn password(byte: u8) -> RoomPassword {
    RoomPassword::from_bytes([byte; 32])
}

type ClientOutcome = Result<(Session, [u8; 32]), HandshakeError>;

/// Runs a handshake; `client_pw`/`client_epoch` may differ from the server's room.
fn run(client_pw: u8, client_epoch: u32) -> (ClientOutcome, ServerHandshake) {
    let (client, hello) = ClientHandshake::start(ROOM, client_epoch, &password(client_pw), &mut OsRng);
    let (server, flight) =
        ServerHandshake::on_client_hello(&hello, |id| (*id == ROOM).then(|| (3, password(1))), &mut OsRng)
            .unwrap();
    (client.on_server_flight(&flight), server)
}

#[test]
fn right_code_gives_matching_sessions() {
    let (client, server) = run(1, 3);
    let (mut client, cf) = client.unwrap();
    let mut server = server.on_client_finished(&cf).unwrap();
    assert_eq!(client.transcript_hash(), server.transcript_hash());
    assert_eq!(client.expose_exporter(), server.expose_exporter());
    assert_eq!((client.role(), server.role()), (Role::Client, Role::Server));
    assert_eq!((server.room_id(), server.epoch()), (ROOM, 3));

    let c2s = client.seal(RecordType::Ping, b"c").unwrap();
    assert_eq!(server.open(&c2s).unwrap().body, b"c");
    let s2c = server.seal(RecordType::Pong, b"s").unwrap();
    assert_eq!(client.open(&s2c).unwrap().body, b"s");
    // Reflection: a record sent back to its own sender fails.
    assert!(client.open(&c2s).is_err());
}

#[test]
fn node_auth_both_ways() {
    let (client, server) = run(1, 3);
    let (mut client, cf) = client.unwrap();
    let mut server = server.on_client_finished(&cf).unwrap();
    let alice = NodeIdentity::generate(&mut OsRng);
    let bob = NodeIdentity::generate(&mut OsRng);
    let from_client = client.seal_node_auth(&alice).unwrap();
    let from_server = server.seal_node_auth(&bob).unwrap();
    let record = server.open(&from_client).unwrap();
    assert_eq!(server.verify_node_auth(&record).unwrap().node_id, alice.node_id());
    let record = client.open(&from_server).unwrap();
    assert_eq!(client.verify_node_auth(&record).unwrap().node_id, bob.node_id());
    // A NODE_AUTH reflected to the same role's peer does not verify.
    let own = crate::protocol::record::Record {
        record_type: RecordType::NodeAuth,
        body: alice
            .sign(Role::Client, client.transcript_hash())
            .encode()
            .to_vec(),
    };
    assert!(client.verify_node_auth(&own).is_err());
}

#[test]
fn wrong_code_fails_on_both_sides_as_wrong_code() {
    // The client checks SF first: with another password it fails there.
    let (client, server) = run(2, 3);
    assert_eq!(client.unwrap_err().kind(), HandshakeErrorKind::WrongCode);
    // A client that ignored SF and sent a CF anyway: the server fails with the same kind.
    let forged = [0u8; 32];
    let err = server.on_client_finished(&forged).unwrap_err();
    assert_eq!(err, HandshakeError::WrongCode);
    assert_eq!(err.kind(), HandshakeErrorKind::WrongCode);
}

#[test]
fn an_old_epoch_is_a_wrong_code() {
    let (client, _) = run(1, 2);
    assert_eq!(client.unwrap_err(), HandshakeError::WrongCode);
}

#[test]
fn unknown_room_and_malformed_hello_fail_before_spake2() {
    let (_, mut hello) = ClientHandshake::start(ROOM, 0, &password(1), &mut OsRng);
    let refuse = |_: &RoomId| -> Option<(u32, RoomPassword)> { None };
    let err = ServerHandshake::on_client_hello(&hello, refuse, &mut OsRng).unwrap_err();
    assert_eq!(err.kind(), HandshakeErrorKind::WrongRoom);
    hello[7] = 1;
    let called = std::cell::Cell::new(false);
    let err = ServerHandshake::on_client_hello(
        &hello,
        |_| {
            called.set(true);
            None
        },
        &mut OsRng,
    )
    .unwrap_err();
    assert_eq!(err, HandshakeError::Hello(HelloError::BadFlags(1)));
    assert_eq!(err.kind(), HandshakeErrorKind::Malformed);
    assert!(!called.get(), "no lookup for a malformed hello");
}

#[test]
fn tampered_flight_and_finished() {
    let (client, hello) = ClientHandshake::start(ROOM, 0, &password(1), &mut OsRng);
    let (server, flight) =
        ServerHandshake::on_client_hello(&hello, |_| Some((0, password(1))), &mut OsRng).unwrap();
    assert_eq!(
        ClientHandshake::start(ROOM, 0, &password(1), &mut OsRng)
            .0
            .on_server_flight(&flight[..72])
            .unwrap_err(),
        HandshakeError::WrongLength
    );
    let mut bad = flight;
    bad[72] ^= 1;
    assert_eq!(
        client.on_server_flight(&bad).unwrap_err(),
        HandshakeError::WrongCode
    );
    assert_eq!(
        server.on_client_finished(&[0; 31]).unwrap_err(),
        HandshakeError::WrongLength
    );
}

#[test]
fn a_corrupt_point_is_malformed() {
    let (_, mut hello) = ClientHandshake::start(ROOM, 0, &password(1), &mut OsRng);
    // y = 2 is not the y-coordinate of a curve point.
    hello[25..].fill(0);
    hello[25] = 2;
    let err = ServerHandshake::on_client_hello(&hello, |_| Some((0, password(1))), &mut OsRng).unwrap_err();
    assert_eq!(err.kind(), HandshakeErrorKind::Malformed);
}

#[test]
fn fixed_randomness_gives_identical_handshakes() {
    use crate::protocol::test_rng::FixedRng;
    let once = || {
        let (client, hello) = ClientHandshake::start(ROOM, 9, &password(1), &mut FixedRng(0x11));
        let (server, flight) =
            ServerHandshake::on_client_hello(&hello, |_| Some((9, password(1))), &mut FixedRng(0x22))
                .unwrap();
        let (session, cf) = client.on_server_flight(&flight).unwrap();
        server.on_client_finished(&cf).unwrap();
        (hello, flight, cf, *session.transcript_hash())
    };
    assert_eq!(once(), once());
}

#[test]
fn key_updates_through_a_session() {
    let (client, server) = run(1, 3);
    let (mut client, cf) = client.unwrap();
    let mut server = server.on_client_finished(&cf).unwrap();
    for round in 0..3u8 {
        let update = client.sealer().seal_key_update().unwrap();
        let data = client.seal(RecordType::Data, &[round; 100]).unwrap();
        assert_eq!(server.open(&update).unwrap().record_type, RecordType::KeyUpdate);
        assert_eq!(server.open(&data).unwrap().body, [round; 100]);
        // The other direction is independent and still on its first key.
        let pong = server.seal(RecordType::Pong, b"").unwrap();
        assert_eq!(client.open(&pong).unwrap().record_type, RecordType::Pong);
    }
    let (sealer, opener) = client.into_parts();
    assert_eq!((sealer.key_updates(), opener.key_updates()), (3, 0));
    assert_eq!(server.opener().key_updates(), 3);
}
