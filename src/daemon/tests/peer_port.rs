// SPDX-License-Identifier: GPL-3.0-or-later
//! The peer port between two machines in one process, over real TCP on 127.0.0.1: joining
//! with the right and a wrong code, bans, pinning, liveness, key update and rotation.

mod support;

use partagpu_core::protocol::RecordType;
use partagpu_daemon::peer::client::{dial, DialError};
use partagpu_daemon::peer::server::ROOM_CHANGED;
use partagpu_daemon::room::{rotated, PinOutcome};
use support::{room_with_code, wrong_code, Machine, RawClient};

#[tokio::test]
async fn the_right_code_opens_a_session_and_both_sides_pin_each_other() {
    let (server, joiner) = (Machine::new(), Machine::new());
    let code = server.create_room();
    let addr = server.listen().await;
    let dialled = dial(addr, &room_with_code(&server, code.clone()), &joiner.context)
        .await
        .unwrap();
    assert_eq!(dialled.hello.room.label.as_deref(), Some("Salle B12"));
    assert_eq!(dialled.hello.room.epoch, 0);
    assert_eq!(dialled.node.node_id.to_hex(), server.room.info().node_id);
    assert!(server.wait_for("new-machine").await, "{:?}", server.kinds());
    assert_eq!(server.room.pinned(), [joiner.room.info().node_id]);
    // A dial into a room the joiner is not in pins nothing yet: pins belong to a room.
    assert!(joiner.room.pinned().is_empty() && joiner.kinds().is_empty());
    drop(dialled);
    // The join pins the member it went through, in the room it joined.
    let room = server.room.current().unwrap();
    let resolved = (room.room_id, room.epoch, room.label.clone(), vec![addr]);
    let (joined, via) = joiner.membership().join_with(code, resolved, None).await.unwrap();
    assert_eq!((joined.room_id, via), (room.room_id, addr));
    assert_eq!(joiner.kinds(), ["new-machine"]);
    assert_eq!(joiner.room.pinned(), [server.room.info().node_id]);
}

#[tokio::test]
async fn a_machine_moving_into_another_room_is_not_held_to_the_pins_of_its_old_one() {
    // A lab PC imaged again (a new identity key) that booted cut off made its own room with
    // the configured code; a member of the lab's room knew its old key at that address.
    let (lab, reimaged) = (Machine::new(), Machine::new());
    lab.create_room();
    let code = reimaged.create_room();
    let addr = reimaged.listen().await;
    let old_key = Machine::new().room.identity().public_key();
    lab.room.pin(&old_key, &addr.to_string(), true, 0).unwrap();
    let own = reimaged.room.current().unwrap();
    let resolved = (own.room_id, own.epoch, own.label.clone(), vec![addr]);
    let from = lab.room.current().unwrap().room_id;
    lab.membership()
        .join_with(code, resolved, Some(from))
        .await
        .unwrap();
    assert_eq!(lab.room.current().unwrap().room_id, own.room_id);
    assert_eq!(lab.room.pinned(), [reimaged.room.info().node_id]);
    assert!(
        !lab.kinds().contains(&"key-changed".to_owned()),
        "{:?}",
        lab.kinds()
    );
    // A member of that room now, it checks its new pins when it dials there again.
    let joined = lab.room.current().unwrap();
    assert!(dial(addr, &joined, &lab.context).await.is_ok());
    let new_machines = lab.kinds().iter().filter(|k| *k == "new-machine").count();
    assert_eq!(new_machines, 1, "{:?}", lab.kinds());
    assert_eq!(
        lab.room.pin(&old_key, &addr.to_string(), true, 1).unwrap(),
        PinOutcome::Changed
    );
}

#[tokio::test]
async fn a_wrong_code_fails_on_both_sides_and_repeated_ones_end_in_a_ban() {
    let (server, joiner) = (Machine::new(), Machine::new());
    let code = server.create_room();
    let addr = server.listen().await;
    let wrong = room_with_code(&server, wrong_code(&code));
    let error = dial(addr, &wrong, &joiner.context).await.err().unwrap();
    assert!(matches!(error, DialError::WrongCode(_)), "{error}");
    assert!(error.to_string().starts_with("wrong code"), "{error}");
    assert!(server.wait_for("wrong-code").await);
    assert_eq!(joiner.kinds(), ["wrong-code"]);
    for _ in 1..5 {
        assert!(matches!(
            dial(addr, &wrong, &joiner.context).await,
            Err(DialError::WrongCode(_))
        ));
    }
    assert!(server.wait_for("ban").await, "{:?}", server.kinds());
    // The joiner counts too and refuses to spend more guesses; a fresh machine on the same
    // address is refused by the server before any handshake, even with the right code.
    assert!(matches!(
        dial(addr, &wrong, &joiner.context).await,
        Err(DialError::Throttled(..))
    ));
    let fresh = Machine::new();
    let right = room_with_code(&server, code);
    let refused = dial(addr, &right, &fresh.context).await.err().unwrap();
    assert!(matches!(refused, DialError::Refused(_)), "{refused}");
    assert!(server.wait_for("refused").await);
    let journal = server.journal.lock().unwrap().list(0, 0);
    let ban = journal.iter().find(|e| e.kind == "ban").unwrap();
    assert_eq!(
        (ban.source.as_str(), ban.severity.as_str()),
        ("127.0.0.1", "critical")
    );
    assert!(ban.message.contains("banned for 10 minutes"), "{}", ban.message);
}

#[tokio::test]
async fn an_old_epoch_is_a_wrong_code() {
    let (server, joiner) = (Machine::new(), Machine::new());
    let code = server.create_room();
    let addr = server.listen().await;
    let old = room_with_code(&server, code);
    let (next, _new_code) = rotated(&server.room.current().unwrap());
    server.room.install(next).unwrap();
    assert!(matches!(
        dial(addr, &old, &joiner.context).await,
        Err(DialError::WrongCode(_))
    ));
}

#[tokio::test]
async fn a_changed_key_at_a_pinned_address_is_refused_and_alerted() {
    let (first, second, joiner) = (Machine::new(), Machine::new(), Machine::new());
    let code = first.create_room();
    // `second` is in the same room with another identity: what a reinstalled machine, or
    // an impostor who knows the code, looks like at an address where `first` was pinned.
    second.room.install(first.room.current().unwrap()).unwrap();
    let addr = second.listen().await;
    // The joiner is a member too: it knew `first` at that address.
    joiner.room.install(first.room.current().unwrap()).unwrap();
    let first_key = first.room.identity().public_key();
    joiner.room.pin(&first_key, &addr.to_string(), true, 0).unwrap();
    let error = dial(addr, &room_with_code(&first, code), &joiner.context)
        .await
        .err()
        .unwrap();
    assert!(error.to_string().contains("new identity key"), "{error}");
    let journal = joiner.journal.lock().unwrap().list(0, 0);
    let alert = journal.iter().find(|e| e.kind == "key-changed").unwrap();
    assert_eq!(alert.severity.as_str(), "critical");
    assert_eq!(alert.node_id, second.room.info().node_id);
    assert_eq!(joiner.room.pinned().len(), 1, "the new key is not pinned");
}

#[tokio::test]
async fn ping_key_update_and_rotation_on_an_open_session() {
    let server = Machine::new();
    let code = server.create_room();
    let addr = server.listen().await;
    let mut client = RawClient::connect(addr, &room_with_code(&server, code)).await;
    let hello = br#"{"purpose":"control","versions":[1],"caps":[]}"#;
    let record = client.session.seal(RecordType::Hello, hello).unwrap();
    client.send_raw(&record).await;
    let reply = client.recv().await.unwrap();
    assert_eq!(reply.record_type, RecordType::Hello);
    let reply: serde_json::Value = serde_json::from_slice(&reply.body).unwrap();
    assert_eq!(reply["room"]["label"], "Salle B12");
    assert_eq!(reply["boot"], server.context.fleet.boot());
    // Then the server's state, which a peer without a fleet may refuse.
    let state = client.recv().await.unwrap();
    assert_eq!(state.record_type, RecordType::Request);
    let refusal = client
        .session
        .seal(RecordType::Response, br#"{"error":"unknown-request"}"#)
        .unwrap();
    client.send_raw(&refusal).await;
    // A request of ours that the server does not know gets its id back.
    let unknown = br#"{"op":"job.submit","id":41}"#;
    let request = client.session.seal(RecordType::Request, unknown).unwrap();
    client.send_raw(&request).await;
    let answer = client.recv().await.unwrap();
    assert_eq!(answer.record_type, RecordType::Response);
    let answer: serde_json::Value = serde_json::from_slice(&answer.body).unwrap();
    assert_eq!(
        (answer["id"].as_u64(), answer["error"].as_str()),
        (Some(41), Some("unknown-request"))
    );
    for _ in 0..2 {
        let ping = client.session.seal(RecordType::Ping, &[]).unwrap();
        client.send_raw(&ping).await;
        assert_eq!(client.recv().await.unwrap().record_type, RecordType::Pong);
        // The next PING goes under the next key: the server must follow (§6.6).
        let update = client.session.sealer().seal_key_update().unwrap();
        client.send_raw(&update).await;
    }
    let (next, _) = rotated(&server.room.current().unwrap());
    server.room.install(next).unwrap();
    let close = client.recv().await.unwrap();
    assert_eq!(close.record_type, RecordType::Close);
    assert_eq!(close.body, ROOM_CHANGED.as_bytes());
    assert!(client.recv().await.is_none(), "nothing after CLOSE");
}
