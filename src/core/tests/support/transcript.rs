// SPDX-License-Identifier: GPL-3.0-or-later
//! Runs one whole connection with fixed randomness and records every byte (PGR/1 §12.7).

use partagpu_core::protocol::{ClientHandshake, NodeIdentity, RecordType, Role, ServerHandshake, Session};
use partagpu_core::room::{RoomCode, RoomId, RoomPassword};

use super::{arr, bytes, FixedRng, TranscriptCase, TranscriptRecord};

/// What a transcript is made from; NODE_AUTH records are computed, the rest is scripted.
pub struct TranscriptInputs {
    pub code_typed: String,
    pub room_id: [u8; 16],
    pub epoch: u32,
    pub client_rng_byte: u8,
    pub server_rng_byte: u8,
    pub client_node_seed: [u8; 32],
    pub server_node_seed: [u8; 32],
    /// `(sender, type, body)` after the two NODE_AUTH records.
    pub script: Vec<(Role, RecordType, Vec<u8>)>,
}

impl TranscriptInputs {
    /// The inputs of the committed `transcript.json`.
    pub fn fixed() -> Self {
        let hello = br#"{"purpose":"control","versions":[1],"caps":[]}"#.to_vec();
        Self {
            code_typed: "\u{C9}l\u{E8}ve  Z\u{E9}nith-abaisser_zeste".to_owned(),
            room_id: std::array::from_fn(|i| (0xB0 + i) as u8),
            epoch: 7,
            client_rng_byte: 0x11,
            server_rng_byte: 0x22,
            client_node_seed: [0xC1; 32],
            server_node_seed: [0x5E; 32],
            script: vec![
                (Role::Client, RecordType::Hello, hello.clone()),
                (Role::Server, RecordType::Hello, hello),
                (Role::Client, RecordType::Ping, Vec::new()),
                (Role::Server, RecordType::Pong, Vec::new()),
                (Role::Client, RecordType::KeyUpdate, Vec::new()),
                (Role::Client, RecordType::Request, br#"{"op":"status"}"#.to_vec()),
                (Role::Server, RecordType::Response, br#"{"ok":true}"#.to_vec()),
                (Role::Server, RecordType::KeyUpdate, Vec::new()),
                (
                    Role::Server,
                    RecordType::Data,
                    b"after the server's key update".to_vec(),
                ),
                (Role::Client, RecordType::Close, b"done".to_vec()),
            ],
        }
    }

    /// The inputs a committed case was made from.
    pub fn from_case(case: &TranscriptCase) -> Self {
        let script = case.records[2..]
            .iter()
            .map(|r| {
                let role = if r.from == "client" {
                    Role::Client
                } else {
                    Role::Server
                };
                let record_type = RecordType::from_byte(r.record_type).expect("known type");
                (role, record_type, bytes(&r.body))
            })
            .collect();
        Self {
            code_typed: case.code_typed.clone(),
            room_id: arr(&case.room_id),
            epoch: case.epoch,
            client_rng_byte: case.client_rng_byte,
            server_rng_byte: case.server_rng_byte,
            client_node_seed: arr(&case.client_node_seed),
            server_node_seed: arr(&case.server_node_seed),
            script,
        }
    }
}

fn name(role: Role) -> &'static str {
    match role {
        Role::Client => "client",
        Role::Server => "server",
    }
}

/// Seals on one side, opens on the other (checking it), and records the wire bytes.
fn send(
    from: Role,
    sessions: &mut (Session, Session),
    record_type: RecordType,
    body: &[u8],
) -> TranscriptRecord {
    let (sender, receiver) = match from {
        Role::Client => (&mut sessions.0, &mut sessions.1),
        Role::Server => (&mut sessions.1, &mut sessions.0),
    };
    let wire = sender.seal(record_type, body).expect("scripted records fit");
    let opened = receiver.open(&wire).expect("the peer opens what was sealed");
    assert_eq!((opened.record_type, opened.body.as_slice()), (record_type, body));
    TranscriptRecord {
        from: name(from).to_owned(),
        record_type: record_type.byte(),
        body: hex::encode(body),
        wire: hex::encode(wire),
    }
}

/// Runs the connection of `inputs`.
pub fn run(inputs: &TranscriptInputs) -> TranscriptCase {
    let code = RoomCode::parse(&inputs.code_typed).expect("a valid code");
    let room_id = RoomId::from_bytes(inputs.room_id);
    let password = RoomPassword::derive(&code, &room_id);
    let server_password = password.clone();
    let (client, client_hello) = ClientHandshake::start(
        room_id,
        inputs.epoch,
        &password,
        &mut FixedRng(inputs.client_rng_byte),
    );
    let (server, server_flight) = ServerHandshake::on_client_hello(
        &client_hello,
        |id| (*id == room_id).then_some((inputs.epoch, server_password)),
        &mut FixedRng(inputs.server_rng_byte),
    )
    .expect("the server knows the room");
    let (client, client_finished) = client.on_server_flight(&server_flight).expect("same code");
    let server = server.on_client_finished(&client_finished).expect("same code");
    let th = hex::encode(client.transcript_hash());
    let exporter = hex::encode(client.expose_exporter());
    let mut sessions = (client, server);

    let client_node = NodeIdentity::from_seed(&inputs.client_node_seed);
    let server_node = NodeIdentity::from_seed(&inputs.server_node_seed);
    let mut records = Vec::new();
    for (role, node) in [(Role::Client, &client_node), (Role::Server, &server_node)] {
        let th = *sessions.0.transcript_hash();
        let body = node.sign(role, &th).encode();
        let record = send(role, &mut sessions, RecordType::NodeAuth, &body);
        records.push(record);
    }
    for (role, record_type, body) in &inputs.script {
        records.push(send(*role, &mut sessions, *record_type, body));
    }
    TranscriptCase {
        code_typed: inputs.code_typed.clone(),
        room_id: room_id.to_hex(),
        epoch: inputs.epoch,
        password: hex::encode(password.expose_secret()),
        client_rng_byte: inputs.client_rng_byte,
        server_rng_byte: inputs.server_rng_byte,
        client_node_seed: hex::encode(inputs.client_node_seed),
        server_node_seed: hex::encode(inputs.server_node_seed),
        client_hello: hex::encode(client_hello),
        server_flight: hex::encode(server_flight),
        client_finished: hex::encode(client_finished),
        th,
        exporter,
        records,
    }
}
