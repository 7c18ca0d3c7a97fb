// SPDX-License-Identifier: GPL-3.0-or-later
//! `Room1`: the room this machine is in. Properties hold public facts only; the code leaves
//! the service in exactly three replies: `New` and `Rotate` (to show once) and the
//! polkit-authorised `RevealCode`.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;

use partagpu_core::ids::actions;
use partagpu_core::room::{Language, RoomCode};
use zbus::message::Header;
use zbus::object_server::SignalEmitter;
use zbus::zvariant::OwnedValue;
use zbus::Connection;

use crate::auth::authorize;
use crate::error::BusError;
use crate::membership::{JoinTarget, Membership, MembershipError};
use crate::room::RoomError;

/// The `Room1` object.
pub struct RoomIface {
    membership: Arc<Membership>,
}

impl RoomIface {
    /// An object over `membership`.
    #[must_use]
    pub fn new(membership: Arc<Membership>) -> Self {
        Self { membership }
    }

    async fn emit_all(&self, emitter: &SignalEmitter<'_>) -> zbus::Result<()> {
        self.joined_changed(emitter).await?;
        self.room_id_changed(emitter).await?;
        self.epoch_changed(emitter).await?;
        self.label_changed(emitter).await
    }
}

/// The words of a code as one string, for the reply that shows it.
fn spoken(code: &RoomCode) -> String {
    code.expose_words().join(" ")
}

impl From<MembershipError> for BusError {
    fn from(error: MembershipError) -> Self {
        let message = error.to_string();
        match error {
            MembershipError::InvalidCode(_) | MembershipError::InvalidArgument(_) => {
                Self::InvalidArgument(message)
            }
            MembershipError::AlreadyInRoom(_) => Self::AlreadyInRoom(message),
            MembershipError::RoomNotFound(_) => Self::RoomNotFound(message),
            MembershipError::WrongCode(_) => Self::WrongCode(message),
            MembershipError::PeerFailed(_) => Self::PeerFailed(message),
            MembershipError::Room(RoomError::NotInRoom) => Self::NotInRoom(message),
            MembershipError::Room(RoomError::InvalidLabel) => Self::InvalidArgument(message),
            MembershipError::Room(RoomError::Storage(error)) => {
                tracing::error!(%error, "could not save the room");
                Self::StorageFailed(message)
            }
        }
    }
}

fn join_target(options: &HashMap<String, OwnedValue>) -> Result<JoinTarget, BusError> {
    let mut target = JoinTarget::default();
    for (key, value) in options {
        let wrong_type =
            |expected: &str| BusError::InvalidArgument(format!("option '{key}' must be of type {expected}"));
        match key.as_str() {
            "room" => {
                let room: &str = value.downcast_ref().map_err(|_| wrong_type("s"))?;
                target.room = Some(room.to_owned()).filter(|r| !r.is_empty());
            }
            "peer" => {
                let peer: &str = value.downcast_ref().map_err(|_| wrong_type("s"))?;
                let address = peer.parse::<SocketAddr>().map_err(|_| {
                    BusError::InvalidArgument(format!("'{peer}' is not an address like 10.0.0.5:7655"))
                })?;
                target.peer = Some(address);
            }
            "epoch" => target.epoch = Some(value.downcast_ref::<u32>().map_err(|_| wrong_type("u"))?),
            _ => return Err(BusError::InvalidArgument(format!("unknown option '{key}'"))),
        }
    }
    Ok(target)
}

#[zbus::interface(name = "org.partagpu.PartaGPU.Daemon.Room1")]
impl RoomIface {
    /// Whether this machine is in a room.
    #[zbus(property)]
    fn joined(&self) -> bool {
        self.membership.room.current().is_some()
    }

    /// The room id (32 hex digits), empty outside a room.
    #[zbus(property)]
    fn room_id(&self) -> String {
        self.membership.room.info().room_id
    }

    /// The room's epoch: how many times its code was changed.
    #[zbus(property)]
    fn epoch(&self) -> u32 {
        self.membership.room.info().epoch
    }

    /// The label the room's creator chose.
    #[zbus(property)]
    fn label(&self) -> String {
        self.membership.room.info().label
    }

    /// This machine's node id (32 hex digits).
    #[zbus(property(emits_changed_signal = "const"))]
    fn node_id(&self) -> String {
        self.membership.room.info().node_id
    }

    /// This machine's key fingerprint: six English words to compare aloud.
    #[zbus(property(emits_changed_signal = "const"))]
    fn fingerprint(&self) -> String {
        self.membership.room.info().fingerprint
    }

    /// Creates a room and returns its code, to show once. `language` is `en` or `fr`
    /// (empty: `en`).
    #[zbus(name = "New", out_args("code"))]
    async fn create(
        &self,
        label: String,
        language: String,
        #[zbus(header)] header: Header<'_>,
        #[zbus(connection)] connection: &Connection,
        #[zbus(signal_emitter)] emitter: SignalEmitter<'_>,
    ) -> Result<String, BusError> {
        let language = match language.as_str() {
            "" => Language::English,
            tag => Language::from_tag(tag).ok_or_else(|| {
                BusError::InvalidArgument(format!("unknown code language '{tag}': use en or fr"))
            })?,
        };
        crate::room::check_label(&label).map_err(|e| BusError::InvalidArgument(e.to_string()))?;
        authorize(connection, &header, actions::MANAGE_ROOM).await?;
        let code = self.membership.create(&label, language).await?;
        self.emit_all(&emitter).await?;
        Ok(spoken(&code))
    }

    /// Joins a room with its code. Options: `room` (s: id or label), `peer` (s: address of a
    /// member, skipping mDNS; needs `room` as an id), `epoch` (u, with `peer`).
    #[zbus(out_args("room_id", "label"))]
    async fn join(
        &self,
        code: String,
        options: HashMap<String, OwnedValue>,
        #[zbus(header)] header: Header<'_>,
        #[zbus(connection)] connection: &Connection,
        #[zbus(signal_emitter)] emitter: SignalEmitter<'_>,
    ) -> Result<(String, String), BusError> {
        let target = join_target(&options)?;
        // A typo is refused before polkit is asked and before any guess is spent.
        RoomCode::parse(&code).map_err(|e| BusError::InvalidArgument(e.to_string()))?;
        authorize(connection, &header, actions::MANAGE_ROOM).await?;
        let joined = self.membership.join(&code, target).await?;
        self.emit_all(&emitter).await?;
        Ok((joined.room_id.to_hex(), joined.label))
    }

    /// Leaves the room (forgets its code and pinned machines). Returns false when not in one.
    #[zbus(out_args("left"))]
    async fn leave(
        &self,
        #[zbus(header)] header: Header<'_>,
        #[zbus(connection)] connection: &Connection,
        #[zbus(signal_emitter)] emitter: SignalEmitter<'_>,
    ) -> Result<bool, BusError> {
        authorize(connection, &header, actions::MANAGE_ROOM).await?;
        let left = self.membership.leave()?;
        self.emit_all(&emitter).await?;
        Ok(left)
    }

    /// Changes the code (next epoch) and returns it; every session closes, and members must
    /// join again with the new code.
    #[zbus(out_args("code"))]
    async fn rotate(
        &self,
        #[zbus(header)] header: Header<'_>,
        #[zbus(connection)] connection: &Connection,
        #[zbus(signal_emitter)] emitter: SignalEmitter<'_>,
    ) -> Result<String, BusError> {
        authorize(connection, &header, actions::MANAGE_ROOM).await?;
        let code = self.membership.rotate().await?;
        self.emit_all(&emitter).await?;
        Ok(spoken(&code))
    }

    /// The current code, for an administrator who needs to show it again.
    #[zbus(out_args("code"))]
    async fn reveal_code(
        &self,
        #[zbus(header)] header: Header<'_>,
        #[zbus(connection)] connection: &Connection,
    ) -> Result<String, BusError> {
        authorize(connection, &header, actions::REVEAL_CODE).await?;
        let code = self.membership.room.reveal().map_err(MembershipError::from)?;
        tracing::info!("the room code was revealed to an authorised caller");
        Ok(spoken(&code))
    }

    /// Rooms announced on the network: (room id, label, epoch, member addresses).
    #[zbus(out_args("rooms"))]
    async fn visible_rooms(&self) -> Vec<(String, String, u32, Vec<String>)> {
        self.membership
            .visible()
            .await
            .into_iter()
            .map(|room| {
                let members = room.members.iter().map(ToString::to_string).collect();
                (room.room_id.to_hex(), room.label, room.epoch, members)
            })
            .collect()
    }
}
