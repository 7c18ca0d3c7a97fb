// SPDX-License-Identifier: GPL-3.0-or-later
//! An authenticated session: node authentication and pinning (PGR/1 §5, §7.3), then the
//! server's HELLO before the member link takes over (§7.3, §7.5).

use partagpu_core::journal::Severity;
use partagpu_core::protocol::{RecordError, RecordType, VerifiedNode};
use partagpu_core::room::fingerprint;
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

/// Exchanges NODE_AUTH records and applies TOFU. The client's record went out with CF; the
/// server sends its own only after checking the client's (§7.2).
///
/// # Errors
/// [`AuthFailure`], after journalling it.
pub async fn authenticate(
    channel: &mut Channel,
    context: &PeerContext,
    side: Side,
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
    let node_id = node.node_id.to_hex();
    let dialled = side == Side::Client;
    let outcome = context
        .room
        .pin(&node.public_key, &channel.peer.to_string(), dialled, now_ms());
    match outcome {
        Ok(PinOutcome::Known) => {}
        Ok(PinOutcome::New) => context.reporter.report(
            Severity::Info,
            kinds::NEW_MACHINE,
            &source,
            &node_id,
            format!(
                "A machine joined this machine's trust for the first time; its fingerprint is: {}.",
                fingerprint(&node.public_key)
            ),
        ),
        Ok(PinOutcome::Changed) => {
            context.reporter.report(
                Severity::Critical,
                kinds::KEY_CHANGED,
                &source,
                &node_id,
                format!(
                    "The machine at {} shows a different identity key than before (new fingerprint: {}). \
                     It was refused. If it was reinstalled, make this machine leave and rejoin the room.",
                    channel.peer,
                    fingerprint(&node.public_key)
                ),
            );
            channel.writer.close("identity changed").await;
            return Err(AuthFailure::KeyChanged);
        }
        Err(error) => {
            tracing::error!(%error, "cannot save a pinned machine; refusing the session");
            return Err(AuthFailure::Storage);
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
