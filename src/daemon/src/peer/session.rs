// SPDX-License-Identifier: GPL-3.0-or-later
//! An authenticated session: node authentication and pinning (PGR/1 §5, §7.3), then the
//! server's HELLO before the member link takes over (§7.3, §7.5).

use std::net::SocketAddr;

use partagpu_core::journal::Severity;
use partagpu_core::protocol::{RecordError, RecordType, VerifiedNode};
use partagpu_core::room::{fingerprint, RoomId};
use tokio::time::Instant;

use super::control::{parse_client_hello, RoomFacts, ServerHelloBody, VERSION};
use super::events::kinds;
use super::wire::{Channel, WireError};
use super::{now_ms, PeerContext};
use crate::fleet::link::{self, PeerHello};
use crate::room::PinOutcome;

/// Which end this machine is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// It accepted the connection.
    Server,
    /// It dialled.
    Client,
}

/// Why node authentication failed (already journalled).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthFailure {
    /// The machine at this address shows another key than the one pinned.
    #[error("the machine at this address has a new identity key: refused (see the security log)")]
    KeyChanged,
    /// The peer's NODE_AUTH is missing or invalid.
    #[error("the peer did not prove its identity")]
    Invalid,
    /// The connection ended or timed out.
    #[error("the connection ended during authentication")]
    Ended,
    /// The pin could not be saved.
    #[error("the machine's identity could not be saved")]
    Storage,
}

/// Reports a record-layer failure the way §6.5 asks: journal, then the caller closes.
pub fn report_wire_error(context: &PeerContext, channel_peer: &str, node_id: &str, error: &WireError) {
    let (kind, what) = match error {
        WireError::Record(
            RecordError::TooShort | RecordError::LengthMismatch | RecordError::BodyTooLong(_),
        ) => (kinds::OVERSIZE, "a record of invalid length"),
        WireError::Record(_) => (
            kinds::MALFORMED,
            "a record that failed authentication or is invalid",
        ),
        WireError::Deadline => (kinds::DEADLINE, "nothing in time"),
        WireError::Closed | WireError::Io(_) => return,
    };
    context.reporter.report(
        Severity::Warning,
        kind,
        channel_peer,
        node_id,
        format!("The machine at {channel_peer} sent {what}; the connection was closed."),
    );
}

/// When a session's peer is checked against the pins (TOFU, §5.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pinning {
    /// A session of this machine's room: checked and pinned during authentication.
    Now,
    /// A dial into a room this machine is not in (a join, a merge of configured rooms). Pins
    /// belong to a room (joining another forgets them), so this room's pins say nothing about
    /// that one's members: the member joined through is pinned once the join is done.
    AfterJoin,
}

impl Pinning {
    /// How a dial for `room_id` is checked: against the pins only if it is this machine's room.
    #[must_use]
    pub fn for_dial(context: &PeerContext, room_id: RoomId) -> Self {
        match context.room.current() {
            Some(current) if current.room_id == room_id => Self::Now,
            _ => Self::AfterJoin,
        }
    }
}

/// Exchanges NODE_AUTH records and applies TOFU as `pinning` says. The client's record went
/// out with CF; the server sends its own only after checking the client's (§7.2).
///
/// # Errors
/// [`AuthFailure`], after journalling it.
pub async fn authenticate(
    channel: &mut Channel,
    context: &PeerContext,
    side: Side,
    pinning: Pinning,
    deadline: Instant,
) -> Result<VerifiedNode, AuthFailure> {
    let source = channel.peer.ip().to_string();
    let record = match channel.reader.recv_before(deadline).await {
        Ok(record) => record,
        Err(error) => {
            report_wire_error(context, &source, "", &error);
            return Err(AuthFailure::Ended);
        }
    };
    let node = match channel.verify_node_auth(&record) {
        Ok(node) => node,
        Err(error) => {
            context.reporter.report(
                Severity::Warning,
                kinds::BAD_IDENTITY,
                &source,
                "",
                format!("The machine at {source} did not prove its identity ({error}); the connection was closed."),
            );
            return Err(AuthFailure::Invalid);
        }
    };
    if pinning == Pinning::Now {
        if let Err(failure) = pin_and_report(context, &node, channel.peer, side) {
            if failure == AuthFailure::KeyChanged {
                channel.writer.close("identity changed").await;
            }
            return Err(failure);
        }
    }
    if side == Side::Server {
        let identity = context.room.identity();
        let record = channel
            .seal_node_auth(&identity)
            .map_err(|_| AuthFailure::Ended)?;
        channel
            .writer
            .send_raw(&record)
            .await
            .map_err(|_| AuthFailure::Ended)?;
    }
    Ok(node)
}

/// Compares `node`'s key with the pins of this machine's room, pins it when new, and journals
/// a new machine or a changed key. `address` is the peer's; `side` says who dialled (a dialled
/// address is the identity the machine was expected under, §5.3).
///
/// # Errors
/// [`AuthFailure::KeyChanged`] (journalled; the caller closes) or [`AuthFailure::Storage`].
pub fn pin_and_report(
    context: &PeerContext,
    node: &VerifiedNode,
    address: SocketAddr,
    side: Side,
) -> Result<(), AuthFailure> {
    let source = address.ip().to_string();
    let node_id = node.node_id.to_hex();
    if node_id == context.fleet.own_node() {
        // This machine's own key (its own address, or a copy of its disk): nothing to pin or
        // to call new; the fleet refuses the link and says which (Refused::SameIdentity).
        return Ok(());
    }
    let dialled = side == Side::Client;
    let outcome = context
        .room
        .pin(&node.public_key, &address.to_string(), dialled, now_ms());
    match outcome {
        Ok(PinOutcome::Known) => Ok(()),
        Ok(PinOutcome::New) => {
            context.reporter.report(
                Severity::Info,
                kinds::NEW_MACHINE,
                &source,
                &node_id,
                format!(
                    "A machine joined this machine's trust for the first time; its fingerprint is: {}.",
                    fingerprint(&node.public_key)
                ),
            );
            Ok(())
        }
        Ok(PinOutcome::Changed) => {
            context.reporter.report(
                Severity::Critical,
                kinds::KEY_CHANGED,
                &source,
                &node_id,
                format!(
                    "The machine at {address} shows a different identity key than before (new fingerprint: {}). \
                     It was refused. If it was reinstalled, make this machine leave and rejoin the room.",
                    fingerprint(&node.public_key)
                ),
            );
            Err(AuthFailure::KeyChanged)
        }
        Err(error) => {
            tracing::error!(%error, "cannot save a pinned machine; refusing the session");
            Err(AuthFailure::Storage)
        }
    }
}

/// Serves a control session as the server: the client's HELLO first, then the member link
/// ([`crate::fleet::link`]) until it ends.
pub async fn run_control(mut channel: Channel, context: &std::sync::Arc<PeerContext>, node: &VerifiedNode) {
    let source = channel.peer.ip().to_string();
    let node_id = node.node_id.to_hex();
    let hello = channel
        .reader
        .recv_before(Instant::now() + context.timing.dead_after)
        .await;
    let client = match hello {
        Ok(record) if record.record_type == RecordType::Hello => match parse_client_hello(&record.body) {
            Ok(hello) => hello,
            Err(error) => {
                channel.writer.close(&error.to_string()).await;
                return;
            }
        },
        Ok(_) => {
            context.reporter.report(
                Severity::Warning,
                kinds::MALFORMED,
                &source,
                &node_id,
                format!("The machine at {source} sent a record before its HELLO; the connection was closed."),
            );
            return;
        }
        Err(error) => return report_wire_error(context, &source, &node_id, &error),
    };
    let room = context.room.current();
    let reply = ServerHelloBody {
        purpose: client.purpose.clone(),
        versions: vec![VERSION],
        caps: Vec::new(),
        room: RoomFacts {
            label: room.as_ref().map(|r| r.label.clone()).filter(|l| !l.is_empty()),
            epoch: channel.epoch,
        },
        boot: Some(context.fleet.boot().to_owned()),
        port: Some(context.fleet.port()),
    };
    drop(room);
    let body = serde_json::to_vec(&reply).unwrap_or_default();
    if channel.writer.send(RecordType::Hello, &body).await.is_err() {
        return;
    }
    if client.purpose == super::control::PURPOSE_JOB {
        return super::jobs::serve(channel, context, node).await;
    }
    let peer = PeerHello {
        boot: client.boot,
        port: client.port,
    };
    let _ = link::run(channel, context, node, Side::Server, peer).await;
}
