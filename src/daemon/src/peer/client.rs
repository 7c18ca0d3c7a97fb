// SPDX-License-Identifier: GPL-3.0-or-later
//! Outgoing connections (PGR/1 §7.1): the client handshake, node authentication and the
//! control HELLO, with the same throttling of failed confirmations as the server (§9: a fake
//! server also gets one guess per connection, so clients count too).

use std::net::SocketAddr;

use partagpu_core::protocol::hello::SERVER_FLIGHT_LEN;
use partagpu_core::protocol::{ClientHandshake, HandshakeErrorKind, RecordType, VerifiedNode};
use rand_core::OsRng;
use tokio::net::TcpStream;
use tokio::time::{timeout_at, Instant};

use super::control::{parse_server_hello, ClientHelloBody, ServerHelloBody};
use super::session::{authenticate, AuthFailure, Pinning, Side};
use super::throttle::Admission;
use super::wire::{read_exact_before, write_before, Channel, WireError};
use super::PeerContext;
use crate::room::ActiveRoom;

/// Why a connection to a member failed. Messages are for the person who typed the code.
#[derive(Debug, thiserror::Error)]
pub enum DialError {
    /// TCP connect failed.
    #[error("cannot reach the machine at {0}: {1}")]
    Unreachable(SocketAddr, std::io::Error),
    /// Closed before the server's flight: unknown room there, or this machine is banned.
    #[error(
        "the machine at {0} closed the connection before the handshake: it is not in this room, \
         or it refuses this machine for a while after wrong codes"
    )]
    Refused(SocketAddr),
    /// Key confirmation failed: the code (or its epoch) is not the room's.
    #[error(
        "wrong code: the machine at {0} does not accept this room code. Check the four words with \
         the room's creator (the code may have been changed)"
    )]
    WrongCode(SocketAddr),
    /// This machine refuses to try again yet (it tried wrong codes too often).
    #[error("too many wrong codes were tried with the machine at {0}; try again in {1} minutes")]
    Throttled(SocketAddr, u64),
    /// A deadline passed.
    #[error("the machine at {0} did not answer in time")]
    Timeout(SocketAddr),
    /// The peer broke the protocol.
    #[error("the machine at {0} does not speak PGR/1 correctly: {1}")]
    Protocol(SocketAddr, String),
    /// Node authentication failed.
    #[error("the machine at {0}: {1}")]
    Auth(SocketAddr, AuthFailure),
}

/// An open control session with a member.
pub struct Dialled {
    /// The session.
    pub channel: Channel,
    /// The member's verified identity.
    pub node: VerifiedNode,
    /// Its HELLO: the room's label and epoch.
    pub hello: ServerHelloBody,
}

fn wire_to_dial(addr: SocketAddr, error: WireError) -> DialError {
    match error {
        WireError::Closed => DialError::Refused(addr),
        WireError::Deadline => DialError::Timeout(addr),
        other => DialError::Protocol(addr, other.to_string()),
    }
}

/// Connects to `addr` as a member of `room`.
///
/// # Errors
/// [`DialError`]; a wrong code is journalled and counted against `addr` first.
pub async fn dial(addr: SocketAddr, room: &ActiveRoom, context: &PeerContext) -> Result<Dialled, DialError> {
    let hello = ClientHelloBody::control(context.fleet.boot(), context.fleet.port());
    dial_for(addr, room, context, hello).await
}

/// Connects to `addr` for the purpose `hello` names (a member link, or a job).
///
/// # Errors
/// As [`dial`].
pub async fn dial_for(
    addr: SocketAddr,
    room: &ActiveRoom,
    context: &PeerContext,
    hello: ClientHelloBody,
) -> Result<Dialled, DialError> {
    if let Admission::Banned(left) = context.throttle().admit(addr.ip(), std::time::Instant::now()) {
        return Err(DialError::Throttled(addr, left.as_secs().div_ceil(60)));
    }
    let deadline = Instant::now() + context.timing.handshake;
    let mut stream = match timeout_at(deadline, TcpStream::connect(addr)).await {
        Err(_) => return Err(DialError::Timeout(addr)),
        Ok(Err(error)) => return Err(DialError::Unreachable(addr, error)),
        Ok(Ok(stream)) => stream,
    };
    let _ = stream.set_nodelay(true);
    let (handshake, client_hello) =
        ClientHandshake::start(room.room_id, room.epoch, room.password(), &mut OsRng);
    write_before(&mut stream, &client_hello, deadline)
        .await
        .map_err(|e| wire_to_dial(addr, e))?;
    let flight = read_exact_before::<SERVER_FLIGHT_LEN>(&mut stream, deadline)
        .await
        .map_err(|e| wire_to_dial(addr, e))?;
    let (session, client_finished) = match handshake.on_server_flight(&flight) {
        Ok(done) => done,
        Err(error) if error.kind() == HandshakeErrorKind::WrongCode => {
            context.failed_guess(
                addr.ip(),
                format!(
                    "The machine at {} did not accept this machine's room code (a wrong code, or an old one).",
                    addr.ip()
                ),
                true,
            );
            return Err(DialError::WrongCode(addr));
        }
        Err(error) => return Err(DialError::Protocol(addr, error.to_string())),
    };
    let mut channel = Channel::new(stream, session, addr);
    let identity = context.room.identity();
    let node_auth = channel
        .seal_node_auth(&identity)
        .map_err(|e| DialError::Protocol(addr, e.to_string()))?;
    let mut first_flight = client_finished.to_vec();
    first_flight.extend_from_slice(&node_auth);
    channel
        .writer
        .send_raw(&first_flight)
        .await
        .map_err(|e| wire_to_dial(addr, e))?;
    let pinning = Pinning::for_dial(context, room.room_id);
    let node = authenticate(&mut channel, context, Side::Client, pinning, deadline)
        .await
        .map_err(|failure| DialError::Auth(addr, failure))?;
    context
        .throttle()
        .record_success(addr.ip(), std::time::Instant::now());
    let purpose = hello.purpose.clone();
    let hello = serde_json::to_vec(&hello).unwrap_or_default();
    channel
        .writer
        .send(RecordType::Hello, &hello)
        .await
        .map_err(|e| wire_to_dial(addr, e))?;
    let reply = channel
        .reader
        .recv_before(Instant::now() + context.timing.handshake)
        .await
        .map_err(|e| wire_to_dial(addr, e))?;
    if reply.record_type != RecordType::Hello {
        return Err(DialError::Protocol(
            addr,
            "its first record after NODE_AUTH is not HELLO".into(),
        ));
    }
    let hello = parse_server_hello(&reply.body).map_err(|e| DialError::Protocol(addr, e.to_string()))?;
    if hello.purpose != purpose {
        return Err(DialError::Protocol(
            addr,
            "it answered for another purpose".into(),
        ));
    }
    Ok(Dialled { channel, node, hello })
}
