// SPDX-License-Identifier: GPL-3.0-or-later
//! Room lifecycle (create, join, leave, rotate), shared by the D-Bus interface and tests:
//! the code is validated locally first (a typo costs no guess, §2.4), Argon2id runs off the
//! async thread, and a join proves the code to a member before anything is saved.

use std::net::SocketAddr;
use std::sync::Arc;

use partagpu_core::room::{CodeError, Language, RoomCode, RoomId};

use crate::discovery::{Discovery, VisibleRoom};
use crate::fleet::link::{self, PeerHello};
use crate::peer::client::{dial, DialError};
use crate::peer::session::{self, Side};
use crate::peer::PeerContext;
use crate::room::{self, ActiveRoom, RoomError, RoomState};

/// A room to dial: its id, epoch, label and the members announcing it.
pub type Resolved = (RoomId, u32, String, Vec<SocketAddr>);

/// Where to join.
#[derive(Debug, Clone, Default)]
pub struct JoinTarget {
    /// A room id (32 hex digits) or a label, to choose among visible rooms.
    pub room: Option<String>,
    /// A member's address, skipping mDNS (then `room` must be the room id).
    pub peer: Option<SocketAddr>,
    /// The epoch, with `peer` (mDNS announces it otherwise).
    pub epoch: Option<u32>,
}

/// Why a room operation failed; messages never contain the code.
#[derive(Debug, thiserror::Error)]
pub enum MembershipError {
    /// The typed code is not valid (says which word, not the code).
    #[error("{0}")]
    InvalidCode(#[from] CodeError),
    /// Another argument is wrong.
    #[error("{0}")]
    InvalidArgument(String),
    /// The machine is already in another room.
    #[error("this machine is already in the room {0}; leave it first (partagpuctl room leave)")]
    AlreadyInRoom(String),
    /// Nothing to join.
    #[error("{0}")]
    RoomNotFound(String),
    /// The member refused the code.
    #[error("{0}")]
    WrongCode(DialError),
    /// No member could be reached or completed the handshake.
    #[error("{0}")]
    PeerFailed(DialError),
    /// State change failed.
    #[error(transparent)]
    Room(#[from] RoomError),
}

/// The room operations.
pub struct Membership {
    /// Room state.
    pub room: Arc<RoomState>,
    /// Peer port context (dialling, throttling, journal).
    pub peer: Arc<PeerContext>,
    /// mDNS, when enabled.
    pub discovery: Option<Arc<Discovery>>,
}

/// How a room is named to the user: `"label" (id)`, or the id alone.
fn describe(label: &str, room_id: &RoomId) -> String {
    if label.is_empty() {
        room_id.to_hex()
    } else {
        format!("\"{label}\" ({})", room_id.to_hex())
    }
}

async fn derive(room_id: RoomId, epoch: u32, label: String, code: RoomCode) -> ActiveRoom {
    let derive = move || ActiveRoom::derive(room_id, epoch, label, code);
    match tokio::task::spawn_blocking(derive.clone()).await {
        Ok(room) => room,
        // The blocking pool is gone only at shutdown; derive here rather than fail.
        Err(_) => derive(),
    }
}

impl Membership {
    /// Announces the current room on mDNS (or stops announcing).
    pub fn announce(&self) {
        if let Some(discovery) = &self.discovery {
            let room = self.room.current();
            discovery.announce(room.as_ref().map(|r| (&r.room_id, r.epoch, r.label.as_str())));
        }
    }

    fn refuse_if_in_other_room(&self, room_id: Option<&RoomId>) -> Result<(), MembershipError> {
        match self.room.current() {
            Some(current) if Some(&current.room_id) != room_id => Err(MembershipError::AlreadyInRoom(
                describe(&current.label, &current.room_id),
            )),
            _ => Ok(()),
        }
    }

    /// Creates a room; returns its code (to show once).
    ///
    /// # Errors
    /// [`MembershipError`].
    pub async fn create(&self, label: &str, language: Language) -> Result<RoomCode, MembershipError> {
        let code = RoomCode::generate(language, &mut rand_core::OsRng);
        self.create_with(label, code.clone()).await?;
        Ok(code)
    }

    /// Creates a room with a given code (the one of the config file, `[room]`).
    ///
    /// # Errors
    /// [`MembershipError`].
    pub async fn create_with(&self, label: &str, code: RoomCode) -> Result<RoomId, MembershipError> {
        room::check_label(label)?;
        self.refuse_if_in_other_room(None)?;
        let room_id = RoomId::generate(&mut rand_core::OsRng);
        let active = derive(room_id, 0, label.to_owned(), code).await;
        // Argon2id ran on another thread: the machine may have joined a room meanwhile.
        self.refuse_if_in_other_room(None)?;
        self.room.install(active)?;
        tracing::info!(room = %room_id, "room created");
        self.announce();
        Ok(room_id)
    }

    /// Rotates the code: same room, next epoch; every session closes.
    ///
    /// # Errors
    /// [`MembershipError`].
    pub async fn rotate(&self) -> Result<RoomCode, MembershipError> {
        let current = self.room.current().ok_or(RoomError::NotInRoom)?;
        let (next, code) = tokio::task::spawn_blocking(move || room::rotated(&current))
            .await
            .map_err(|e| MembershipError::InvalidArgument(e.to_string()))?;
        let epoch = next.epoch;
        self.room.install(next)?;
        tracing::info!(epoch, "room code rotated");
        self.announce();
        Ok(code)
    }

    /// Leaves the room.
    ///
    /// # Errors
    /// [`MembershipError`].
    pub fn leave(&self) -> Result<bool, MembershipError> {
        let left = self.room.leave()?;
        if left {
            self.peer.fleet.clear();
            tracing::info!("left the room");
            self.announce();
        }
        Ok(left)
    }

    /// Rooms announced on the network.
    pub async fn visible(&self) -> Vec<VisibleRoom> {
        let Some(discovery) = &self.discovery else {
            return Vec::new();
        };
        let own = self.room.current().map(|r| r.room_id);
        discovery
            .fresh_rooms()
            .await
            .into_iter()
            .filter(|r| Some(r.room_id) != own)
            .collect()
    }

    /// Joins with a typed code.
    ///
    /// # Errors
    /// [`MembershipError`]; nothing is saved unless a member accepted the code.
    pub async fn join(&self, typed: &str, target: JoinTarget) -> Result<ActiveRoom, MembershipError> {
        let code = RoomCode::parse(typed)?;
        let resolved = self.resolve(target).await?;
        self.refuse_if_in_other_room(Some(&resolved.0))?;
        self.join_with(code, resolved, None).await.map(|(room, _)| room)
    }

    /// Joins the room `resolved` names with `code`, and returns it with the member that
    /// accepted the code. `moving_from` allows leaving that room for it (the config file's
    /// rule for two rooms made at the same time, docs/service.md); otherwise the machine must
    /// be in no room or already in this one.
    ///
    /// # Errors
    /// [`MembershipError`]; nothing is saved unless a member accepted the code.
    pub async fn join_with(
        &self,
        code: RoomCode,
        resolved: Resolved,
        moving_from: Option<RoomId>,
    ) -> Result<(ActiveRoom, SocketAddr), MembershipError> {
        let (room_id, epoch, label, members) = resolved;
        let candidate = derive(room_id, epoch, label.clone(), code).await;
        let mut last_error = None;
        for member in members {
            match dial(member, &candidate, &self.peer).await {
                Ok(mut dialled) => {
                    let label = dialled.hello.room.label.clone().unwrap_or(label);
                    let joined = candidate.with_label(label);
                    if let Err(error) = room::check_label(&joined.label) {
                        dialled.channel.writer.close("invalid label").await;
                        return Err(error.into());
                    }
                    // Checked again after the handshake: a room change meanwhile wins.
                    if let Some(current) = self.room.current() {
                        if current.room_id != room_id && Some(current.room_id) != moving_from {
                            dialled.channel.writer.close("this machine changed room").await;
                            return Err(MembershipError::AlreadyInRoom(describe(
                                &current.label,
                                &current.room_id,
                            )));
                        }
                    }
                    self.room.install(joined.clone())?;
                    tracing::info!(room = %room_id, epoch, via = %member, "joined the room");
                    // The pins start empty in a new room: the member that proved the code is
                    // the first (it was not checked against the old room's, see `Pinning`).
                    // Only a storage error can fail here, already logged: the member is then
                    // pinned at its next session.
                    let _ = session::pin_and_report(&self.peer, &dialled.node, member, Side::Client);
                    self.announce();
                    // The session that proved the code becomes the first member link.
                    let context = Arc::clone(&self.peer);
                    tokio::spawn(async move {
                        let hello = PeerHello {
                            boot: dialled.hello.boot,
                            port: dialled.hello.port,
                        };
                        link::run(dialled.channel, &context, &dialled.node, Side::Client, hello).await
                    });
                    return Ok((joined, member));
                }
                // Trying the same wrong code on the next member would only spend guesses.
                Err(error @ (DialError::WrongCode(_) | DialError::Throttled(..))) => {
                    return Err(MembershipError::WrongCode(error));
                }
                Err(error) => {
                    tracing::info!(%error, "join attempt failed; trying the next member");
                    last_error = Some(error);
                }
            }
        }
        Err(last_error.map_or_else(
            || MembershipError::RoomNotFound("the room has no reachable member".into()),
            MembershipError::PeerFailed,
        ))
    }

    async fn resolve(&self, target: JoinTarget) -> Result<Resolved, MembershipError> {
        if let Some(peer) = target.peer {
            let id = target.room.as_deref().ok_or_else(|| {
                MembershipError::InvalidArgument(
                    "with a peer address, also give the room id (--room ID)".into(),
                )
            })?;
            let room_id = RoomId::from_hex(id).map_err(|_| {
                MembershipError::InvalidArgument(
                    "with a peer address, --room must be the 32-digit room id".into(),
                )
            })?;
            return Ok((room_id, target.epoch.unwrap_or(0), String::new(), vec![peer]));
        }
        if self.discovery.is_none() {
            return Err(MembershipError::RoomNotFound(
                "discovery is turned off on this machine: give a member's address (--peer) and the room id"
                    .into(),
            ));
        }
        let visible = self.visible().await;
        let wanted = target.room.as_deref().map(str::to_lowercase);
        let matching: Vec<VisibleRoom> = visible
            .into_iter()
            .filter(|room| {
                wanted
                    .as_deref()
                    .is_none_or(|w| room.room_id.to_hex() == w || room.label.to_lowercase() == w)
            })
            .collect();
        choose(matching, target.room.as_deref())
    }
}

/// Picks one room among the visible ones: refuses to guess between rooms (§2.7), and during a
/// rotation prefers the members announcing the newest epoch.
pub fn choose(mut rooms: Vec<VisibleRoom>, asked: Option<&str>) -> Result<Resolved, MembershipError> {
    let mut ids: Vec<RoomId> = rooms.iter().map(|r| r.room_id).collect();
    ids.sort_by_key(RoomId::to_hex);
    ids.dedup();
    match ids.len() {
        0 => Err(MembershipError::RoomNotFound(match asked {
            Some(asked) => format!("no room \"{asked}\" is announced on this network"),
            None => "no room is announced on this network (is a member on and on the same network?)".into(),
        })),
        1 => {
            rooms.sort_by_key(|r| std::cmp::Reverse(r.epoch));
            let newest = rooms.swap_remove(0);
            Ok((newest.room_id, newest.epoch, newest.label, newest.members))
        }
        _ => {
            let names: Vec<String> = rooms.iter().map(|r| describe(&r.label, &r.room_id)).collect();
            Err(MembershipError::RoomNotFound(format!(
                "several rooms are announced: {}; choose one with --room ID or --room LABEL",
                names.join(", ")
            )))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn room(id: u8, epoch: u32, label: &str, port: u16) -> VisibleRoom {
        VisibleRoom {
            room_id: RoomId::from_hex(&format!("{id:02x}").repeat(16)).unwrap(),
            epoch,
            label: label.into(),
            members: vec![SocketAddr::from(([10, 98, 0, 1], port))],
        }
    }

    #[test]
    fn one_room_is_chosen_with_its_newest_epoch() {
        let (id, epoch, label, members) =
            choose(vec![room(1, 0, "B12", 1), room(1, 2, "B12", 2)], None).unwrap();
        assert_eq!((id, epoch, label.as_str()), (room(1, 0, "", 0).room_id, 2, "B12"));
        assert_eq!(members[0].port(), 2);
    }

    #[test]
    fn several_rooms_or_none_are_explained() {
        let error = choose(vec![room(1, 0, "B12", 1), room(2, 0, "", 1)], None).unwrap_err();
        let message = error.to_string();
        assert!(
            message.contains("\"B12\"") && message.contains(&"02".repeat(16)),
            "{message}"
        );
        assert!(choose(vec![], Some("B13"))
            .unwrap_err()
            .to_string()
            .contains("no room \"B13\""));
    }
}
