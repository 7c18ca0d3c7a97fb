// SPDX-License-Identifier: GPL-3.0-or-later
//! The handshake as two sans-IO state machines (PGR/1 §3, §4, §7).
//!
//! ```text
//! client                                   server
//! ClientHandshake::start      ── 57 B ──▶  ServerHandshake::on_client_hello
//! ClientHandshake::on_server_flight ◀── 41 + 32 B ──
//!                             ── 32 B ──▶  ServerHandshake::on_client_finished
//! Session (+ NODE_AUTH first record each way)     Session
//! ```
//!
//! Each step consumes the state, so a state can be used once only. The caller reads exact
//! sizes ([`CLIENT_HELLO_LEN`], [`SERVER_FLIGHT_LEN`], [`FINISHED_LEN`]) under deadlines.

use rand_core::CryptoRngCore;
use spake2::{Ed25519Group, Identity, Password, Spake2};
use zeroize::Zeroizing;

use crate::protocol::hello::{
    spake2_identities, ClientHello, HelloError, ServerHello, CLIENT_HELLO_LEN, FINISHED_LEN,
    SERVER_FLIGHT_LEN, SERVER_HELLO_LEN, SPAKE2_MSG_LEN,
};
use crate::protocol::keys::{transcript_hash, KeySchedule};
use crate::protocol::Role;
use crate::room::{RoomId, RoomPassword};

mod session;

pub use session::Session;

/// Why a handshake failed. Messages carry no secret; the caller maps [`Self::kind`] to its
/// reaction (§7.4): close silently, count a failed guess, journal.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HandshakeError {
    /// A hello that is not PGR/1 suite 1 (§3.1).
    #[error(transparent)]
    Hello(#[from] HelloError),
    /// A flight or Finished of the wrong size.
    #[error("the peer sent a handshake message of the wrong size")]
    WrongLength,
    /// A SPAKE2 message that is not a valid point.
    #[error("the peer's key exchange message is corrupt")]
    BadSpake2Message,
    /// The server has no room with this id.
    #[error("this machine is not in the room the peer asked for")]
    UnknownRoom,
    /// The Finished MAC did not verify: the peer used another code or epoch (a failed guess).
    #[error("the peer does not know this room's current code")]
    WrongCode,
}

/// The three reactions the caller needs (§7.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HandshakeErrorKind {
    /// Not PGR/1 or broken bytes: close silently, no guess counted.
    Malformed,
    /// A room this server is not in: close silently, no guess counted.
    WrongRoom,
    /// A completed exchange with another password: count a failed guess, journal it.
    WrongCode,
}

impl HandshakeError {
    /// What kind of failure this is.
    #[must_use]
    pub fn kind(&self) -> HandshakeErrorKind {
        match self {
            Self::Hello(_) | Self::WrongLength | Self::BadSpake2Message => HandshakeErrorKind::Malformed,
            Self::UnknownRoom => HandshakeErrorKind::WrongRoom,
            Self::WrongCode => HandshakeErrorKind::WrongCode,
        }
    }
}

fn spake2_key(spake: Spake2<Ed25519Group>, peer_msg: &[u8]) -> Result<Zeroizing<Vec<u8>>, HandshakeError> {
    spake
        .finish(peer_msg)
        .map(Zeroizing::new)
        .map_err(|_| HandshakeError::BadSpake2Message)
}

fn spake2_msg(bytes: &[u8]) -> [u8; SPAKE2_MSG_LEN] {
    let mut msg = [0u8; SPAKE2_MSG_LEN];
    msg.copy_from_slice(bytes);
    msg
}

/// The client (TCP initiator, SPAKE2 side A) after sending its ClientHello.
#[derive(Debug)]
pub struct ClientHandshake {
    spake: Spake2<Ed25519Group>,
    client_hello: [u8; CLIENT_HELLO_LEN],
    room_id: RoomId,
    epoch: u32,
}

impl ClientHandshake {
    /// Starts SPAKE2 as side A and returns the 57-byte ClientHello to send.
    ///
    /// The `spake2` crate copies the password into a buffer it does not zeroize; this is a
    /// known limit of version 0.4.
    pub fn start(
        room_id: RoomId,
        epoch: u32,
        password: &RoomPassword,
        rng: &mut impl CryptoRngCore,
    ) -> (Self, [u8; CLIENT_HELLO_LEN]) {
        let (id_a, id_b) = spake2_identities(&room_id, epoch);
        let (spake, msg) = Spake2::<Ed25519Group>::start_a_with_rng(
            &Password::new(password.expose_secret()),
            &Identity::new(&id_a),
            &Identity::new(&id_b),
            &mut *rng,
        );
        let hello = ClientHello {
            room_id,
            spake2_msg: spake2_msg(&msg),
        };
        let client_hello = hello.encode();
        let state = Self {
            spake,
            client_hello,
            room_id,
            epoch,
        };
        (state, client_hello)
    }

    /// Takes the server's 73-byte flight (ServerHello ‖ ServerFinished), checks SF, and
    /// returns the session and the 32-byte ClientFinished to send.
    ///
    /// # Errors
    /// [`HandshakeError::WrongCode`] when SF does not verify (count it as a failed guess
    /// against that address); a malformed kind otherwise.
    pub fn on_server_flight(self, flight: &[u8]) -> Result<(Session, [u8; FINISHED_LEN]), HandshakeError> {
        if flight.len() != SERVER_FLIGHT_LEN {
            return Err(HandshakeError::WrongLength);
        }
        let (server_hello, server_finished) = flight.split_at(SERVER_HELLO_LEN);
        let parsed = ServerHello::parse(server_hello)?;
        let k = spake2_key(self.spake, &parsed.spake2_msg)?;
        let schedule = KeySchedule::new(&k, transcript_hash(&self.client_hello, &parsed.encode()));
        schedule
            .verify_server_finished(server_finished)
            .map_err(|_| HandshakeError::WrongCode)?;
        let mut sf = [0u8; FINISHED_LEN];
        sf.copy_from_slice(server_finished);
        let cf = schedule.client_finished(&sf);
        Ok((
            Session::new(Role::Client, &schedule, self.room_id, self.epoch),
            cf,
        ))
    }
}

/// The server (TCP responder, SPAKE2 side B) after sending its flight.
#[derive(Debug)]
pub struct ServerHandshake {
    schedule: KeySchedule,
    server_finished: [u8; FINISHED_LEN],
    room_id: RoomId,
    epoch: u32,
}

impl ServerHandshake {
    /// Parses the 57-byte ClientHello, looks the room up (`lookup` returns the room's current
    /// epoch and password), runs SPAKE2 side B, and returns the 73-byte flight to send.
    ///
    /// # Errors
    /// Malformed hellos and unknown rooms fail before any SPAKE2 work (§8.1).
    pub fn on_client_hello(
        client_hello: &[u8],
        lookup: impl FnOnce(&RoomId) -> Option<(u32, RoomPassword)>,
        rng: &mut impl CryptoRngCore,
    ) -> Result<(Self, [u8; SERVER_FLIGHT_LEN]), HandshakeError> {
        let parsed = ClientHello::parse(client_hello)?;
        let (epoch, password) = lookup(&parsed.room_id).ok_or(HandshakeError::UnknownRoom)?;
        let (id_a, id_b) = spake2_identities(&parsed.room_id, epoch);
        let (spake, msg) = Spake2::<Ed25519Group>::start_b_with_rng(
            &Password::new(password.expose_secret()),
            &Identity::new(&id_a),
            &Identity::new(&id_b),
            &mut *rng,
        );
        let k = spake2_key(spake, &parsed.spake2_msg)?;
        let server_hello = ServerHello {
            spake2_msg: spake2_msg(&msg),
        }
        .encode();
        let schedule = KeySchedule::new(&k, transcript_hash(&parsed.encode(), &server_hello));
        let server_finished = schedule.server_finished();
        let mut flight = [0u8; SERVER_FLIGHT_LEN];
        flight[..SERVER_HELLO_LEN].copy_from_slice(&server_hello);
        flight[SERVER_HELLO_LEN..].copy_from_slice(&server_finished);
        let state = Self {
            schedule,
            server_finished,
            room_id: parsed.room_id,
            epoch,
        };
        Ok((state, flight))
    }

    /// The room the client asked for.
    #[must_use]
    pub fn room_id(&self) -> RoomId {
        self.room_id
    }

    /// Checks the 32-byte ClientFinished and returns the session.
    ///
    /// # Errors
    /// [`HandshakeError::WrongCode`] when CF does not verify (a failed guess from that
    /// source); [`HandshakeError::WrongLength`] for another size.
    pub fn on_client_finished(self, client_finished: &[u8]) -> Result<Session, HandshakeError> {
        if client_finished.len() != FINISHED_LEN {
            return Err(HandshakeError::WrongLength);
        }
        self.schedule
            .verify_client_finished(&self.server_finished, client_finished)
            .map_err(|_| HandshakeError::WrongCode)?;
        Ok(Session::new(
            Role::Server,
            &self.schedule,
            self.room_id,
            self.epoch,
        ))
    }
}

#[cfg(test)]
mod tests;
