// SPDX-License-Identifier: GPL-3.0-or-later
//! The listener (PGR/1 §7.2): admission before any work, the handshake under deadlines, node
//! authentication and pinning, then the control session until CLOSE, death, rotation or the
//! session's end of life.

use std::net::SocketAddr;
use std::sync::Arc;

use partagpu_core::journal::Severity;
use partagpu_core::protocol::hello::{CLIENT_HELLO_LEN, FINISHED_LEN};
use partagpu_core::protocol::{HandshakeErrorKind, RecordType, ServerHandshake};
use rand_core::{OsRng, RngCore};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::Instant;

use super::events::kinds;
use super::session::{authenticate, run_control, Pinning, Side};
use super::slots::NoSlot;
use super::throttle::Admission;
use super::wire::{read_exact_before, write_before, Channel, WireError};
use super::PeerContext;

/// Accepts connections until the listener fails; each runs in its own task.
pub async fn serve(listener: TcpListener, context: Arc<PeerContext>) {
    let mut flush = tokio::time::interval(std::time::Duration::from_secs(5));
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    let context = Arc::clone(&context);
                    tokio::spawn(async move { handle(stream, peer, &context).await });
                }
                Err(error) => {
                    // EMFILE and the like: wait a little rather than spin.
                    tracing::warn!(%error, "cannot accept a peer connection");
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                }
            },
            _ = flush.tick() => context.reporter.flush(),
        }
    }
}

async fn handle(mut stream: TcpStream, peer: SocketAddr, context: &Arc<PeerContext>) {
    let ip = peer.ip();
    let source = ip.to_string();
    let accepted_at = Instant::now();
    match context.throttle().admit(ip, std::time::Instant::now()) {
        Admission::Allowed => {}
        Admission::Banned(left) => {
            context.reporter.report(
                Severity::Warning,
                kinds::REFUSED,
                &source,
                "",
                format!(
                    "A connection from the banned address {source} was refused ({} min of ban left).",
                    left.as_secs().div_ceil(60)
                ),
            );
            return;
        }
        Admission::Slowed => {
            context.reporter.report(
                Severity::Warning,
                kinds::REFUSED,
                &source,
                "",
                format!("A connection from {source} was refused: the machine is slowing down guesses."),
            );
            return;
        }
    }
    let slot = match context.slots.acquire(ip, OsRng.next_u32()) {
        Ok(slot) => slot,
        Err(why) => {
            let what = match why {
                NoSlot::PerAddress => "too many unfinished handshakes from this address",
                NoSlot::Full => "too many unfinished handshakes on this machine",
            };
            context.reporter.report(
                Severity::Warning,
                kinds::CONNECTION_FLOOD,
                &source,
                "",
                format!("A connection from {source} was refused: {what}."),
            );
            return;
        }
    };
    let _ = stream.set_nodelay(true);
    let handshake_deadline = accepted_at + context.timing.handshake;
    let hello =
        match read_exact_before::<CLIENT_HELLO_LEN>(&mut stream, accepted_at + context.timing.client_hello)
            .await
        {
            Ok(hello) => hello,
            Err(WireError::Deadline) => {
                deadline_hit(context, &source, "its ClientHello");
                return;
            }
            Err(error) => {
                tracing::debug!(%peer, %error, "connection ended before a ClientHello");
                return;
            }
        };
    let room = &context.room;
    let (server, flight) = match ServerHandshake::on_client_hello(&hello, |id| room.lookup(id), &mut OsRng) {
        Ok(result) => result,
        Err(error) => {
            match error.kind() {
                HandshakeErrorKind::WrongRoom => {
                    tracing::debug!(%peer, "ClientHello for a room this machine is not in")
                }
                _ => context.reporter.report(
                    Severity::Warning,
                    kinds::MALFORMED,
                    &source,
                    "",
                    format!("The machine at {source} sent a handshake that is not PGR/1: {error}."),
                ),
            }
            return;
        }
    };
    if write_before(&mut stream, &flight, handshake_deadline)
        .await
        .is_err()
    {
        return;
    }
    // From here on the client can test its guess against SF: whatever ends the exchange
    // without a valid CF counts as a failed guess (a client need not send CF at all).
    let wrong_code = |how: &str| {
        context.failed_guess(
            ip,
            format!("The machine at {source} tried a wrong room code (or an old one): {how}."),
            false,
        );
    };
    let client_finished = match read_exact_before::<FINISHED_LEN>(&mut stream, handshake_deadline).await {
        Ok(cf) => cf,
        Err(WireError::Deadline) => return wrong_code("it did not confirm the key in time"),
        Err(_) => return wrong_code("it left after the key exchange"),
    };
    let session = match server.on_client_finished(&client_finished) {
        Ok(session) => session,
        Err(_) => return wrong_code("its key confirmation did not match"),
    };
    let mut channel = Channel::new(stream, session, peer);
    let Ok(node) = authenticate(
        &mut channel,
        context,
        Side::Server,
        Pinning::Now,
        handshake_deadline,
    )
    .await
    else {
        return;
    };
    drop(slot);
    context.throttle().record_success(ip, std::time::Instant::now());
    tracing::info!(%peer, node = %node.node_id.to_hex(), "peer session established");
    run_control(channel, context, &node).await;
}

fn deadline_hit(context: &PeerContext, source: &str, what: &str) {
    context.reporter.report(
        Severity::Warning,
        kinds::DEADLINE,
        source,
        "",
        format!("The machine at {source} was disconnected: it did not send {what} in time."),
    );
}

/// The CLOSE reason when the room changes under a session.
pub const ROOM_CHANGED: &str = "the room's code changed";

/// Record types a control session accepts after HELLO.
#[must_use]
pub fn control_record_allowed(record_type: RecordType) -> bool {
    matches!(
        record_type,
        RecordType::Ping
            | RecordType::Pong
            | RecordType::KeyUpdate
            | RecordType::Close
            | RecordType::Request
            | RecordType::Response
    )
}
