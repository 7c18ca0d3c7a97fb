// SPDX-License-Identifier: GPL-3.0-or-later
//! Negative and DoS tests of the peer port (sandbox.md T2/T3, PGR/1 §6.5, §7.4, §8, §9):
//! downgrade, wrong room, slow-loris, connection floods, and replayed, tampered, reordered,
//! truncated, reflected, oversize and out-of-state records. Each checks what the server did:
//! closed without a byte where the spec says silent, and what it journalled.

mod support;

use std::time::Duration;

use partagpu_core::protocol::{ClientHandshake, RecordType};
use partagpu_daemon::peer::slots::SlotLimits;
use rand_core::OsRng;
use support::{closed_without_a_byte, room_with_code, Machine, RawClient};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

async fn client_hello(server: &Machine, code: partagpu_core::room::RoomCode) -> [u8; 57] {
    let room = room_with_code(server, code);
    ClientHandshake::start(room.room_id, room.epoch, room.password(), &mut OsRng).1
}

#[tokio::test]
async fn downgrades_and_foreign_bytes_are_closed_silently_without_counting_a_guess() {
    let server = Machine::new();
    let code = server.create_room();
    let addr = server.listen().await;
    let hello = client_hello(&server, code).await;
    // magic, version, suite, flags, SPAKE2 side tag (§3.1 order).
    for (offset, value) in [(0, b'X'), (4, 0x02), (5, 0x02), (6, 0x01), (24, b'B')] {
        let mut altered = hello;
        altered[offset] = value;
        let mut stream = TcpStream::connect(addr).await.unwrap();
        stream.write_all(&altered).await.unwrap();
        assert!(closed_without_a_byte(&mut stream).await, "byte {offset}");
    }
    assert!(server.wait_for("malformed").await);
    assert!(
        !server.kinds().iter().any(|k| k == "wrong-code"),
        "{:?}",
        server.kinds()
    );
}

#[tokio::test]
async fn a_room_this_machine_is_not_in_gets_silence_and_no_journal_entry() {
    let (server, other) = (Machine::new(), Machine::new());
    server.create_room();
    let other_code = other.create_room();
    let addr = server.listen().await;
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream
        .write_all(&client_hello(&other, other_code).await)
        .await
        .unwrap();
    assert!(closed_without_a_byte(&mut stream).await);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(server.kinds().is_empty(), "{:?}", server.kinds());
}

#[tokio::test]
async fn slow_loris_connections_are_cut_at_the_deadline() {
    let server = Machine::new();
    let code = server.create_room();
    let addr = server.listen().await;
    let hello = client_hello(&server, code).await;
    let mut silent = TcpStream::connect(addr).await.unwrap();
    let mut trickle = TcpStream::connect(addr).await.unwrap();
    trickle.write_all(&hello[..20]).await.unwrap();
    assert!(closed_without_a_byte(&mut silent).await);
    assert!(closed_without_a_byte(&mut trickle).await);
    assert!(server.wait_for("deadline").await, "{:?}", server.kinds());
}

#[tokio::test]
async fn a_client_that_never_confirms_after_the_key_exchange_spends_a_guess() {
    // It can test its guess against SF offline, so leaving without CF is a failed guess.
    let server = Machine::new();
    let code = server.create_room();
    let addr = server.listen().await;
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream
        .write_all(&client_hello(&server, code).await)
        .await
        .unwrap();
    let mut flight = [0u8; 73];
    tokio::io::AsyncReadExt::read_exact(&mut stream, &mut flight)
        .await
        .unwrap();
    drop(stream);
    assert!(server.wait_for("wrong-code").await);
}

#[tokio::test]
async fn connection_floods_hit_the_per_address_cap() {
    let server = Machine::with_limits(SlotLimits::default());
    server.create_room();
    let server_code = |m: &Machine| m.room.reveal().unwrap();
    let addr = server.listen().await;
    let mut held = Vec::new();
    for _ in 0..4 {
        held.push(TcpStream::connect(addr).await.unwrap());
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    let mut fifth = TcpStream::connect(addr).await.unwrap();
    assert!(closed_without_a_byte(&mut fifth).await);
    assert!(server.wait_for("connection-flood").await);
    // Once the four are gone, the address gets slots again.
    drop(held);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let hello = client_hello(&server, server_code(&server)).await;
    let mut again = TcpStream::connect(addr).await.unwrap();
    again.write_all(&hello).await.unwrap();
    let mut flight = [0u8; 73];
    tokio::io::AsyncReadExt::read_exact(&mut again, &mut flight)
        .await
        .unwrap();
}

async fn established(server: &Machine, code: partagpu_core::room::RoomCode) -> RawClient {
    let addr = server.listen().await;
    let mut client = RawClient::connect(addr, &room_with_code(server, code)).await;
    let hello = client
        .session
        .seal(RecordType::Hello, br#"{"purpose":"control","versions":[1]}"#)
        .unwrap();
    client.send_raw(&hello).await;
    assert_eq!(client.recv().await.unwrap().record_type, RecordType::Hello);
    // A member link starts with the server's state (§7.5); nothing else comes unasked.
    let state = client.recv().await.unwrap();
    assert_eq!(state.record_type, RecordType::Request);
    assert!(state.body.starts_with(br#"{"op":"fleet.state""#));
    client
}

/// Sends `bytes` on an established session and expects the server to close without answering
/// and to journal `kind`.
async fn expect_rejected(server: &Machine, client: &mut RawClient, bytes: &[u8], kind: &str) {
    client.send_raw(bytes).await;
    assert!(closed_without_a_byte(&mut client.stream).await, "server answered");
    assert!(server.wait_for(kind).await, "{kind}: {:?}", server.kinds());
}

#[tokio::test]
async fn a_replayed_record_is_refused() {
    let server = Machine::new();
    let code = server.create_room();
    let mut client = established(&server, code).await;
    let ping = client.session.seal(RecordType::Ping, &[]).unwrap();
    client.send_raw(&ping).await;
    assert_eq!(client.recv().await.unwrap().record_type, RecordType::Pong);
    expect_rejected(&server, &mut client, &ping, "malformed").await;
}

#[tokio::test]
async fn a_tampered_record_is_refused() {
    let server = Machine::new();
    let code = server.create_room();
    let mut client = established(&server, code).await;
    let mut ping = client.session.seal(RecordType::Ping, &[]).unwrap();
    ping[3] ^= 0x01;
    expect_rejected(&server, &mut client, &ping, "malformed").await;
}

#[tokio::test]
async fn reordered_records_are_refused() {
    let server = Machine::new();
    let code = server.create_room();
    let mut client = established(&server, code).await;
    let first = client.session.seal(RecordType::Ping, &[]).unwrap();
    let second = client.session.seal(RecordType::Ping, &[]).unwrap();
    let _ = first;
    expect_rejected(&server, &mut client, &second, "malformed").await;
}

#[tokio::test]
async fn a_truncated_record_misframes_what_follows_and_is_refused() {
    let server = Machine::new();
    let code = server.create_room();
    let mut client = established(&server, code).await;
    let mut first = client
        .session
        .seal(RecordType::Request, b"{\"op\":\"x\"}")
        .unwrap();
    first.pop();
    let second = client.session.seal(RecordType::Ping, &[]).unwrap();
    first.extend(second);
    expect_rejected(&server, &mut client, &first, "malformed").await;
}

#[tokio::test]
async fn a_reflected_record_is_refused() {
    let server = Machine::new();
    let code = server.create_room();
    let mut client = established(&server, code).await;
    let reflected = client.server_node_auth.clone();
    expect_rejected(&server, &mut client, &reflected, "malformed").await;
}

#[tokio::test]
async fn a_length_below_the_minimum_is_refused_as_oversize() {
    let server = Machine::new();
    let code = server.create_room();
    let mut client = established(&server, code).await;
    expect_rejected(&server, &mut client, &[0x00, 0x05, 1, 2, 3, 4, 5], "oversize").await;
}

#[tokio::test]
async fn records_out_of_state_are_refused() {
    let server = Machine::new();
    let code = server.create_room();
    // DATA has no place in a control session.
    let mut client = established(&server, code.clone()).await;
    let data = client.session.seal(RecordType::Data, b"bytes").unwrap();
    expect_rejected(&server, &mut client, &data, "malformed").await;
    // A PING before HELLO.
    let other = Machine::new();
    other.room.install(server.room.current().unwrap()).unwrap();
    let addr = other.listen().await;
    let mut early = RawClient::connect(addr, &room_with_code(&server, code)).await;
    let ping = early.session.seal(RecordType::Ping, &[]).unwrap();
    expect_rejected(&other, &mut early, &ping, "malformed").await;
}
