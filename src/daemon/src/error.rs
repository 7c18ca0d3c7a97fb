// SPDX-License-Identifier: GPL-3.0-or-later
//! Errors at the bus edge, with the stable names of `dbus/org.partagpu.PartaGPU.Daemon.xml`.

use crate::sharing::ChangeError;

/// What a method call can fail with. The `String` is one sentence for humans.
#[derive(Debug, zbus::DBusError)]
#[zbus(prefix = "org.partagpu.PartaGPU.Daemon.Error")]
pub enum BusError {
    /// A bus failure while serving the call.
    #[zbus(error)]
    ZBus(zbus::Error),
    /// Polkit said no for this caller, or polkit could not be asked.
    NotAuthorized(String),
    /// Validation refused the request; nothing changed.
    InvalidArgument(String),
    /// The change could not be saved; nothing changed.
    StorageFailed(String),
    /// A member refused the room code (wrong code or an old epoch).
    WrongCode(String),
    /// No room matched, or none is visible.
    RoomNotFound(String),
    /// No member of the room could be reached or completed the handshake.
    PeerFailed(String),
    /// The machine is already in another room.
    AlreadyInRoom(String),
    /// The operation needs a room and the machine is in none.
    NotInRoom(String),
    /// The machine does not take the job now (sharing off, paused, cannot run jobs).
    JobRefused(String),
    /// No such job (or artifact).
    JobNotFound(String),
}

impl From<ChangeError> for BusError {
    fn from(error: ChangeError) -> Self {
        match error {
            ChangeError::Invalid(error) => Self::InvalidArgument(error.to_string()),
            ChangeError::Storage(error) => {
                tracing::error!(%error, "could not save the sharing policy");
                Self::StorageFailed(format!("the change could not be saved: {error}"))
            }
        }
    }
}
