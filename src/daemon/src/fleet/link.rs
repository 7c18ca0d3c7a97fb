// SPDX-License-Identifier: GPL-3.0-or-later
//! One member link: the control session after HELLO, the same on both sides (§7.5). It
//! sends this machine's state whenever it changes, answers the peer's states into the fleet
//! table, keeps the session alive (PING/PONG, KEY_UPDATE) and ends on CLOSE, silence (a
//! shorter one while the member is watched, `watched.rs`), the room changing, the session's
//! end of life, or the table preferring another link.

use partagpu_core::fleet::{parse_request, request_id, Response, StateError, StateRequest, STATE_OP};
use partagpu_core::journal::Severity;
use partagpu_core::protocol::{Record, RecordType, VerifiedNode};
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::{CloseRequest, LinkHandle, Refused};
use crate::peer::events::kinds;
use crate::peer::server::{control_record_allowed, ROOM_CHANGED};
use crate::peer::session::{report_wire_error, Side};
use crate::peer::wire::{Channel, Reader, WireError, Writer};
use crate::peer::PeerContext;

/// Longest boot id kept from a peer's HELLO.
const MAX_BOOT_LEN: usize = 32;

/// What the peer said about itself in its HELLO.
#[derive(Debug, Clone, Default)]
pub struct PeerHello {
    /// Its boot id.
    pub boot: Option<String>,
    /// Its peer port.
    pub port: Option<u16>,
}

fn spawn_reader(
    mut reader: Reader,
    silence: std::time::Duration,
) -> mpsc::Receiver<Result<Record, WireError>> {
    let (sender, receiver) = mpsc::channel(8);
    tokio::spawn(async move {
        loop {
            let result = reader.recv_before(Instant::now() + silence).await;
            let stop = !matches!(&result, Ok(record) if record.record_type != RecordType::Close);
            if sender.send(result).await.is_err() || stop {
                return;
            }
        }
    });
    receiver
}

/// Registers the link in the fleet and serves it until it ends; says why the fleet refused it.
pub async fn run(
    mut channel: Channel,
    context: &PeerContext,
    node: &VerifiedNode,
    side: Side,
    hello: PeerHello,
) -> Option<Refused> {
    let boot = hello.boot.filter(|b| b.len() <= MAX_BOOT_LEN).unwrap_or_default();
    let (handle, close) = match context
        .fleet
        .register(node, side, channel.peer, &boot, hello.port)
    {
        Ok(registered) => registered,
        Err(refused) => {
            if refused == Refused::SameIdentity {
                report_same_identity(context, &channel.peer, &node.node_id.to_hex());
            }
            tracing::debug!(peer = %channel.peer, %refused, "link not kept");
            channel.writer.close(&refused.to_string()).await;
            return Some(refused);
        }
    };
    tracing::info!(peer = %channel.peer, node = %handle.node_id, ?side, "member linked");
    let reason = serve(channel, context, &handle, close).await;
    tracing::info!(node = %handle.node_id, reason, "member link ended");
    context.fleet.unregister(&handle);
    None
}

/// Journals a machine at `peer` whose key is also another live machine's: this machine's
/// own, or a member's already linked from another run of the service (`table.rs`).
/// Two machines with one identity cannot both be members (their links, jobs and pins would
/// mix), so the refused one stays out until one of them gets its own machine id.
fn report_same_identity(context: &PeerContext, peer: &std::net::SocketAddr, node_id: &str) {
    let whose = if node_id == context.fleet.own_node() {
        "this machine's identity key: its disk was copied from this one (or this one from it)"
    } else {
        "the identity key of a member already linked from another machine: one disk was copied onto the other"
    };
    context.reporter.report(
        Severity::Critical,
        kinds::SAME_IDENTITY,
        &peer.ip().to_string(),
        node_id,
        format!(
            "The machine at this address has {whose} with the same /etc/machine-id. Give one of \
             them a new machine id and restart its service; it then takes a new identity"
        ),
    );
}

async fn send_state(writer: &mut Writer, id: u64, context: &PeerContext) -> Result<(), WireError> {
    let request = StateRequest {
        op: STATE_OP.to_owned(),
        id,
        state: (*context.fleet.local()).clone(),
    };
    let body = serde_json::to_vec(&request).unwrap_or_default();
    writer.send(RecordType::Request, &body).await
}

fn answer(context: &PeerContext, handle: &LinkHandle, body: &[u8]) -> Vec<u8> {
    let response = match parse_request(body) {
        Ok(request) => {
            context.fleet.update(handle, request.state);
            Response {
                id: Some(request.id),
                ok: true,
                error: None,
            }
        }
        Err(error) => {
            if let StateError::Invalid(field) = error {
                tracing::warn!(node = %handle.node_id, field, "a member sent an invalid state; ignored");
            }
            Response {
                id: request_id(body),
                ok: false,
                error: Some(error.to_string()),
            }
        }
    };
    serde_json::to_vec(&response).unwrap_or_default()
}

async fn serve(
    channel: Channel,
    context: &PeerContext,
    handle: &LinkHandle,
    mut close: CloseRequest,
) -> &'static str {
    let source = channel.peer.ip().to_string();
    let node_id = handle.node_id.clone();
    let timing = context.timing;
    let mut generation = context.room.subscribe();
    generation.borrow_and_update();
    let mut local = context.fleet.subscribe_local();
    local.mark_changed();
    let Channel {
        reader, mut writer, ..
    } = channel;
    let mut records = spawn_reader(reader, timing.dead_after);
    let mut watched = context.fleet.subscribe_watched();
    let ends_at = Instant::now() + timing.max_lifetime;
    let (mut key_since, mut next_id) = (Instant::now(), 0u64);
    // Silence either way (a PING is due) and silence from the peer (it is dead).
    let (mut last_heard, mut last_received) = (Instant::now(), Instant::now());
    // Since when the member is watched: its silence counts from then at the earliest.
    let mut watched_since: Option<Instant> = None;
    loop {
        let watching = super::is_watched(&watched.borrow_and_update(), &node_id);
        if watching != watched_since.is_some() {
            watched_since = watching.then(Instant::now);
            if watching {
                // A PONG now tells at once whether it is still there.
                last_heard = Instant::now();
                if writer.send(RecordType::Ping, &[]).await.is_err() {
                    return "send failed";
                }
            }
        }
        let ping_at = last_heard
            + if watching {
                timing.watched_ping_after
            } else {
                timing.ping_after
            };
        let dead_at = watched_since.map(|since| since.max(last_received) + timing.watched_dead_after);
        tokio::select! {
            Ok(()) = watched.changed() => {}
            () = tokio::time::sleep_until(dead_at.unwrap_or(ends_at)), if dead_at.is_some() => {
                // The reader's own deadline (dead_after) is for links nobody watches.
                report_wire_error(context, &source, &node_id, &WireError::Deadline);
                writer.close("silent while it ran a part of a training").await;
                return "silent while watched";
            }
            _ = generation.changed() => {
                writer.close(ROOM_CHANGED).await;
                return "the room changed";
            }
            reason = &mut close => {
                // A dropped sender (the table was cleared) ends the link too.
                let reason = reason.unwrap_or("this machine left the room");
                writer.close(reason).await;
                return reason;
            }
            () = tokio::time::sleep_until(ends_at) => {
                writer.close("session lifetime reached; reconnect").await;
                return "lifetime reached";
            }
            () = tokio::time::sleep_until(ping_at) => {
                last_heard = Instant::now();
                if writer.send(RecordType::Ping, &[]).await.is_err() { return "send failed"; }
            }
            Ok(()) = local.changed() => {
                local.borrow_and_update();
                next_id += 1;
                if send_state(&mut writer, next_id, context).await.is_err() { return "send failed"; }
            }
            received = records.recv() => {
                last_received = Instant::now();
                last_heard = last_received;
                let record = match received {
                    None | Some(Err(WireError::Closed)) => return "closed",
                    Some(Err(error)) => {
                        report_wire_error(context, &source, &node_id, &error);
                        return "wire error";
                    }
                    Some(Ok(record)) => record,
                };
                match record.record_type {
                    RecordType::Close => return "closed by the peer",
                    RecordType::Ping => {
                        if writer.send(RecordType::Pong, &[]).await.is_err() { return "send failed"; }
                    }
                    RecordType::Request => {
                        let body = answer(context, handle, &record.body);
                        if writer.send(RecordType::Response, &body).await.is_err() { return "send failed"; }
                    }
                    kind if control_record_allowed(kind) => {}
                    _ => {
                        context.reporter.report(
                            partagpu_core::journal::Severity::Warning,
                            kinds::MALFORMED,
                            &source,
                            &node_id,
                            format!("The machine at {source} sent a record that has no place in a control session; the connection was closed."),
                        );
                        return "out of state";
                    }
                }
            }
        }
        if key_since.elapsed() >= timing.key_update_after || writer.needs_key_update() {
            if writer.key_update().await.is_err() {
                return "send failed";
            }
            key_since = Instant::now();
        }
    }
}
