// SPDX-License-Identifier: GPL-3.0-or-later
//! The room part of [`crate::Client`]: typed wrappers of `Room1`.

use std::collections::HashMap;

use serde::Serialize;
use zbus::zvariant::Value;

use crate::{Client, ClientError};

/// What `room show` prints: public facts only.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RoomInfo {
    /// Whether the machine is in a room.
    pub joined: bool,
    /// Room id (32 hex digits), empty outside a room.
    pub room_id: String,
    /// Epoch.
    pub epoch: u32,
    /// Label.
    pub label: String,
    /// This machine's node id.
    pub node_id: String,
    /// This machine's fingerprint words.
    pub fingerprint: String,
}

/// A room seen on the network.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VisibleRoom {
    /// Room id.
    pub room_id: String,
    /// Label.
    pub label: String,
    /// Announced epoch.
    pub epoch: u32,
    /// Members' addresses.
    pub members: Vec<String>,
}

/// Where to join: all optional.
#[derive(Debug, Clone, Default)]
pub struct JoinOptions {
    /// Room id or label.
    pub room: Option<String>,
    /// A member's `host:port`.
    pub peer: Option<String>,
    /// The epoch, with `peer`.
    pub epoch: Option<u32>,
}

impl Client {
    /// Public facts of the room.
    ///
    /// # Errors
    /// A bus error.
    pub async fn room(&self) -> Result<RoomInfo, ClientError> {
        let room = &self.room;
        Ok(RoomInfo {
            joined: room.joined().await?,
            room_id: room.room_id().await?,
            epoch: room.epoch().await?,
            label: room.label().await?,
            node_id: room.node_id().await?,
            fingerprint: room.fingerprint().await?,
        })
    }

    /// Creates a room; returns its code (show it once).
    ///
    /// # Errors
    /// [`ClientError::AlreadyInRoom`], [`ClientError::NotAuthorized`], …
    pub async fn create_room(&self, label: &str, language: &str) -> Result<String, ClientError> {
        Ok(self.room.create(label, language).await?)
    }

    /// Joins with a code; returns (room id, label).
    ///
    /// # Errors
    /// [`ClientError::WrongCode`], [`ClientError::InvalidArgument`] for a typo, …
    pub async fn join_room(
        &self,
        code: &str,
        options: &JoinOptions,
    ) -> Result<(String, String), ClientError> {
        let mut wire: HashMap<&str, Value<'_>> = HashMap::new();
        if let Some(room) = &options.room {
            wire.insert("room", Value::from(room.as_str()));
        }
        if let Some(peer) = &options.peer {
            wire.insert("peer", Value::from(peer.as_str()));
        }
        if let Some(epoch) = options.epoch {
            wire.insert("epoch", Value::from(epoch));
        }
        Ok(self.room.join(code, wire).await?)
    }

    /// Leaves the room; false when not in one.
    ///
    /// # Errors
    /// A bus error or a refusal.
    pub async fn leave_room(&self) -> Result<bool, ClientError> {
        Ok(self.room.leave().await?)
    }

    /// Changes the code; returns the new one.
    ///
    /// # Errors
    /// [`ClientError::NotInRoom`], …
    pub async fn rotate_code(&self) -> Result<String, ClientError> {
        Ok(self.room.rotate().await?)
    }

    /// The current code (polkit `reveal-code`).
    ///
    /// # Errors
    /// [`ClientError::NotAuthorized`], [`ClientError::NotInRoom`], …
    pub async fn reveal_code(&self) -> Result<String, ClientError> {
        Ok(self.room.reveal_code().await?)
    }

    /// Rooms announced on the network (listens a few seconds).
    ///
    /// # Errors
    /// A bus error.
    pub async fn visible_rooms(&self) -> Result<Vec<VisibleRoom>, ClientError> {
        Ok(self
            .room
            .visible_rooms()
            .await?
            .into_iter()
            .map(|(room_id, label, epoch, members)| VisibleRoom {
                room_id,
                label,
                epoch,
                members,
            })
            .collect())
    }
}
