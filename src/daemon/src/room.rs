// SPDX-License-Identifier: GPL-3.0-or-later
//! The room this machine is in, its identity and its pins, kept in the secrets file
//! ([`secrets`]) and shared by the D-Bus interface and the peer port.
//!
//! Every change is saved before it is reported. Leaving or rotating bumps a generation
//! counter that every open session watches, so old sessions close (PGR/1 §6.7).

pub mod machine;
pub mod secrets;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use partagpu_core::protocol::{NodeId, NodeIdentity};
use partagpu_core::room::{fingerprint, Language, RoomCode, RoomId, RoomPassword};
use rand_core::OsRng;
use tokio::sync::watch;
use zeroize::Zeroizing;

use self::machine::MachineTag;
use self::secrets::{SecretsError, StoredPin, StoredRoom, StoredSecrets};
use crate::store::StoreError;

/// Longest label: what fits in one mDNS TXT string with its key (§10).
pub const MAX_LABEL_BYTES: usize = 63;

/// The room as the machine uses it; the code and password never leave this process except
/// through an authorised reveal.
#[derive(Clone)]
pub struct ActiveRoom {
    /// Public id (§2.5).
    pub room_id: RoomId,
    /// Current epoch.
    pub epoch: u32,
    /// Creator's label, maybe empty.
    pub label: String,
    code: RoomCode,
    password: RoomPassword,
}

impl ActiveRoom {
    /// Builds the room from a validated code; runs Argon2id (tens of milliseconds: call it
    /// off the async runtime).
    #[must_use]
    pub fn derive(room_id: RoomId, epoch: u32, label: String, code: RoomCode) -> Self {
        let password = RoomPassword::derive(&code, &room_id);
        Self {
            room_id,
            epoch,
            label,
            code,
            password,
        }
    }

    /// The same room under another label (the label a member reports).
    #[must_use]
    pub fn with_label(self, label: String) -> Self {
        Self { label, ..self }
    }

    /// The SPAKE2 password (§2.6).
    #[must_use]
    pub fn password(&self) -> &RoomPassword {
        &self.password
    }
}

/// What anyone may read: no secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoomInfo {
    /// Room id hex, empty when not in a room.
    pub room_id: String,
    /// Epoch (0 when not in a room).
    pub epoch: u32,
    /// Label.
    pub label: String,
    /// This machine's node id, hex.
    pub node_id: String,
    /// This machine's fingerprint words (§5.4).
    pub fingerprint: String,
}

/// A refused room change.
#[derive(Debug, thiserror::Error)]
pub enum RoomError {
    /// The label is too long or has control characters.
    #[error("the room label must be at most {MAX_LABEL_BYTES} bytes of printable text")]
    InvalidLabel,
    /// Rotate or reveal without a room.
    #[error("this machine is not in a room")]
    NotInRoom,
    /// Saving failed; nothing changed.
    #[error("the room could not be saved: {0}")]
    Storage(#[from] StoreError),
}

/// What TOFU said about a machine's key (§5.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PinOutcome {
    /// First sight: pinned now.
    New,
    /// The key pinned before.
    Known,
    /// The machine at this address used to show another key: refuse.
    Changed,
}

/// How [`RoomState::open`] found the state directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Opened {
    /// With the identity of an earlier start.
    Kept,
    /// Without secrets (or with a damaged file): a new identity and no room.
    New,
    /// With files made on another machine (a copied disk image, [`machine`]): a new identity,
    /// since two machines must never share one; that machine's pins are forgotten (this one
    /// has seen no one yet) and its room is kept (the admin imaged it on purpose).
    Copied {
        /// The node id of the machine the files came from (public).
        previous_node: String,
    },
}

struct Inner {
    room: Option<ActiveRoom>,
    pins: std::collections::BTreeMap<String, StoredPin>,
}

/// The shared room state.
pub struct RoomState {
    state_dir: PathBuf,
    identity: Arc<NodeIdentity>,
    /// The tag saved with the secrets: this machine's, or the stored one when it has none.
    machine: Option<String>,
    opened: Opened,
    inner: Mutex<Inner>,
    generation: watch::Sender<u64>,
}

/// Checks a label: printable, at most [`MAX_LABEL_BYTES`].
///
/// # Errors
/// [`RoomError::InvalidLabel`].
pub fn check_label(label: &str) -> Result<(), RoomError> {
    if label.len() > MAX_LABEL_BYTES || label.chars().any(char::is_control) {
        return Err(RoomError::InvalidLabel);
    }
    Ok(())
}

impl RoomState {
    /// Loads the secrets file, or makes a new identity when there is none or when the file
    /// was made on another machine than `machine` (the tag of this machine's id, if it has
    /// one): see [`Opened`].
    ///
    /// # Errors
    /// [`SecretsError`] when the file cannot be read or the new one cannot be saved.
    pub fn open(state_dir: &Path, machine: Option<&MachineTag>) -> Result<Self, SecretsError> {
        let stored = match secrets::load(state_dir) {
            Ok(stored) => stored,
            Err(error @ SecretsError::Corrupt { .. }) => {
                tracing::error!("{error}; starting with a new machine identity and no room");
                None
            }
            Err(error) => return Err(error),
        };
        let stored_machine = stored.as_ref().and_then(|s| s.machine.clone());
        let copied =
            matches!((&stored_machine, machine), (Some(saved), Some(here)) if saved != here.as_str());
        let (identity, room, pins, opened) = match stored.as_ref().and_then(decode) {
            Some((previous, room, _)) if copied => {
                let previous_node = previous.node_id().to_hex();
                (
                    NodeIdentity::generate(&mut OsRng),
                    room,
                    Default::default(),
                    Opened::Copied { previous_node },
                )
            }
            Some((identity, room, pins)) => (identity, room, pins, Opened::Kept),
            None => (
                NodeIdentity::generate(&mut OsRng),
                None,
                Default::default(),
                Opened::New,
            ),
        };
        let machine = machine
            .map(|tag| tag.as_str().to_owned())
            .or(stored_machine.clone());
        let (generation, _) = watch::channel(0);
        let state = Self {
            state_dir: state_dir.to_owned(),
            identity: Arc::new(identity),
            machine,
            opened,
            inner: Mutex::new(Inner { room, pins }),
            generation,
        };
        if state.opened != Opened::Kept || state.machine != stored_machine {
            state.save(&state.lock())?;
        }
        Ok(state)
    }

    /// How the state directory was found at start.
    #[must_use]
    pub fn opened(&self) -> &Opened {
        &self.opened
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn save(&self, inner: &Inner) -> Result<(), StoreError> {
        let stored = StoredSecrets {
            node_seed: Zeroizing::new(hex::encode(*self.identity.expose_seed())),
            room: inner.room.as_ref().map(|room| StoredRoom {
                room_id: room.room_id.to_hex(),
                epoch: room.epoch,
                label: room.label.clone(),
                code: Zeroizing::new(String::from_utf8_lossy(room.code.normalised_bytes()).into_owned()),
            }),
            pins: inner.pins.clone(),
            machine: self.machine.clone(),
        };
        secrets::save(&self.state_dir, &stored)
    }

    /// This machine's identity.
    #[must_use]
    pub fn identity(&self) -> Arc<NodeIdentity> {
        Arc::clone(&self.identity)
    }

    /// Public facts for `room show`.
    #[must_use]
    pub fn info(&self) -> RoomInfo {
        let inner = self.lock();
        let room = inner.room.as_ref();
        RoomInfo {
            room_id: room.map(|r| r.room_id.to_hex()).unwrap_or_default(),
            epoch: room.map_or(0, |r| r.epoch),
            label: room.map(|r| r.label.clone()).unwrap_or_default(),
            node_id: self.identity.node_id().to_hex(),
            fingerprint: fingerprint(&self.identity.public_key()),
        }
    }

    /// The current room, if any (a clone: holds secrets, keep it short-lived).
    #[must_use]
    pub fn current(&self) -> Option<ActiveRoom> {
        self.lock().room.clone()
    }

    /// The server's lookup (§7.2): the epoch and password of `room_id` if it is ours.
    #[must_use]
    pub fn lookup(&self, room_id: &RoomId) -> Option<(u32, RoomPassword)> {
        let inner = self.lock();
        let room = inner.room.as_ref().filter(|room| room.room_id == *room_id)?;
        Some((room.epoch, room.password.clone()))
    }

    /// Watches room changes: the value moves on every join, leave and rotation.
    #[must_use]
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.generation.subscribe()
    }

    /// Makes `room` the machine's room (create, join, rotate). Pins are kept when the room id
    /// stays the same (rejoin after rotation), dropped otherwise.
    ///
    /// # Errors
    /// [`RoomError`]; on error nothing changed.
    pub fn install(&self, room: ActiveRoom) -> Result<(), RoomError> {
        check_label(&room.label)?;
        let mut inner = self.lock();
        let same_room = inner.room.as_ref().is_some_and(|old| old.room_id == room.room_id);
        let next = Inner {
            pins: if same_room {
                inner.pins.clone()
            } else {
                Default::default()
            },
            room: Some(room),
        };
        self.save(&next)?;
        *inner = next;
        drop(inner);
        self.generation.send_modify(|g| *g += 1);
        Ok(())
    }

    /// Leaves the room: forgets the code and the pins, closes every session.
    ///
    /// # Errors
    /// [`RoomError::Storage`]; on error the machine is still in the room.
    pub fn leave(&self) -> Result<bool, RoomError> {
        let mut inner = self.lock();
        if inner.room.is_none() {
            return Ok(false);
        }
        let next = Inner {
            room: None,
            pins: Default::default(),
        };
        self.save(&next)?;
        *inner = next;
        drop(inner);
        self.generation.send_modify(|g| *g += 1);
        Ok(true)
    }

    /// The code, for an authorised reveal.
    ///
    /// # Errors
    /// [`RoomError::NotInRoom`].
    pub fn reveal(&self) -> Result<RoomCode, RoomError> {
        self.lock()
            .room
            .as_ref()
            .map(|room| room.code.clone())
            .ok_or(RoomError::NotInRoom)
    }

    /// Compares `public_key` with what is pinned, pins it when new, and records where it was
    /// seen. `dialled_address` is set when this machine dialled it: the address is then the
    /// identity it was expected under (§5.3).
    ///
    /// # Errors
    /// [`StoreError`] when the pin cannot be saved (the session is refused: a pin that is not
    /// kept would make TOFU useless).
    pub fn pin(
        &self,
        public_key: &[u8; 32],
        address: &str,
        dialled: bool,
        now_ms: u64,
    ) -> Result<PinOutcome, StoreError> {
        let node_id = NodeId::of_public_key(public_key).to_hex();
        let key_hex = hex::encode(public_key);
        let mut inner = self.lock();
        let changed_at_address = dialled
            && inner
                .pins
                .values()
                .any(|pin| pin.address == address && pin.public_key != key_hex);
        if changed_at_address {
            return Ok(PinOutcome::Changed);
        }
        let outcome = if inner.pins.contains_key(&node_id) {
            PinOutcome::Known
        } else {
            PinOutcome::New
        };
        let mut next = inner.pins.clone();
        let entry = next.entry(node_id).or_insert_with(|| StoredPin {
            public_key: key_hex,
            address: address.to_owned(),
            first_seen_ms: now_ms,
            last_seen_ms: now_ms,
        });
        entry.address = address.to_owned();
        entry.last_seen_ms = now_ms;
        let candidate = Inner {
            room: inner.room.clone(),
            pins: next,
        };
        self.save(&candidate)?;
        inner.pins = candidate.pins;
        Ok(outcome)
    }

    /// Node ids pinned, for tests and `room show`.
    #[must_use]
    pub fn pinned(&self) -> Vec<String> {
        self.lock().pins.keys().cloned().collect()
    }
}

/// Makes a fresh room: random id, epoch 0, a new code in `language`.
#[must_use]
pub fn fresh_room(label: String, language: Language) -> (ActiveRoom, RoomCode) {
    let code = RoomCode::generate(language, &mut OsRng);
    let room = ActiveRoom::derive(RoomId::generate(&mut OsRng), 0, label, code.clone());
    (room, code)
}

/// The same room with a new code and the next epoch (§2.5).
#[must_use]
pub fn rotated(room: &ActiveRoom) -> (ActiveRoom, RoomCode) {
    let code = RoomCode::generate(room.code.language(), &mut OsRng);
    let next = ActiveRoom::derive(
        room.room_id,
        room.epoch.wrapping_add(1),
        room.label.clone(),
        code.clone(),
    );
    (next, code)
}

type Decoded = (
    NodeIdentity,
    Option<ActiveRoom>,
    std::collections::BTreeMap<String, StoredPin>,
);

fn decode(stored: &StoredSecrets) -> Option<Decoded> {
    let seed: [u8; 32] = hex::decode(stored.node_seed.as_str()).ok()?.try_into().ok()?;
    let identity = NodeIdentity::from_seed(&seed);
    let room = stored.room.as_ref().and_then(|room| {
        let code = RoomCode::parse(&room.code).ok()?;
        let room_id = RoomId::from_hex(&room.room_id).ok()?;
        Some(ActiveRoom::derive(room_id, room.epoch, room.label.clone(), code))
    });
    Some((identity, room, stored.pins.clone()))
}

#[cfg(test)]
mod tests;
