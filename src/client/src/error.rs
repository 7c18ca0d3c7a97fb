// SPDX-License-Identifier: GPL-3.0-or-later
//! Bus errors turned into what a user can act on.

use partagpu_core::ids::{BUS_NAME, ERROR_PREFIX};

/// Why a request to `partagpud` failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// No system bus at all.
    #[error("cannot connect to the system bus ({0}); is D-Bus running?")]
    NoBus(String),
    /// The bus is there, the service is not.
    #[error("partagpud is not running (nobody owns {BUS_NAME} on the system bus); start it with: systemctl start partagpud")]
    NotRunning,
    /// Polkit refused, or could not be asked.
    #[error("{0}")]
    NotAuthorized(String),
    /// The service refused the request; nothing changed.
    #[error("{0}")]
    InvalidArgument(String),
    /// The service could not save the change; nothing changed.
    #[error("{0}")]
    StorageFailed(String),
    /// A member of the room refused the code.
    #[error("{0}")]
    WrongCode(String),
    /// No such room on the network.
    #[error("{0}")]
    RoomNotFound(String),
    /// No member could be reached.
    #[error("{0}")]
    PeerFailed(String),
    /// Already in another room.
    #[error("{0}")]
    AlreadyInRoom(String),
    /// Not in a room.
    #[error("{0}")]
    NotInRoom(String),
    /// An artifact could not be saved, or did not match its record; nothing was left behind.
    #[error("artifact '{name}': {problem}")]
    Artifact {
        /// Its name in the job record.
        name: String,
        /// What went wrong.
        problem: String,
    },
    /// Another refusal of the service, under a newer error name: its message is for humans.
    #[error("{0}")]
    Refused(String),
    /// The service answered something this client does not understand (version skew).
    #[error("unexpected answer from partagpud: {0}")]
    Protocol(String),
    /// Any other bus failure.
    #[error("D-Bus error: {0}")]
    Bus(zbus::Error),
}

impl ClientError {
    pub(crate) fn no_bus(error: zbus::Error) -> Self {
        Self::NoBus(error.to_string())
    }
}

impl From<zbus::Error> for ClientError {
    fn from(error: zbus::Error) -> Self {
        let (name, message) = match &error {
            zbus::Error::MethodError(name, message, _) => (name.as_str().to_owned(), message.clone()),
            zbus::Error::FDO(fdo) => match fdo.as_ref() {
                zbus::fdo::Error::ServiceUnknown(_) | zbus::fdo::Error::NameHasNoOwner(_) => {
                    return Self::NotRunning
                }
                _ => return Self::Bus(error),
            },
            _ => return Self::Bus(error),
        };
        let message = message.unwrap_or_default();
        match name
            .strip_prefix(ERROR_PREFIX)
            .and_then(|rest| rest.strip_prefix('.'))
        {
            Some("NotAuthorized") => Self::NotAuthorized(message),
            Some("InvalidArgument") => Self::InvalidArgument(message),
            Some("StorageFailed") => Self::StorageFailed(message),
            Some("WrongCode") => Self::WrongCode(message),
            Some("RoomNotFound") => Self::RoomNotFound(message),
            Some("PeerFailed") => Self::PeerFailed(message),
            Some("AlreadyInRoom") => Self::AlreadyInRoom(message),
            Some("NotInRoom") => Self::NotInRoom(message),
            _ if name == "org.freedesktop.DBus.Error.ServiceUnknown"
                || name == "org.freedesktop.DBus.Error.NameHasNoOwner" =>
            {
                Self::NotRunning
            }
            // A name this client does not know yet still carries a sentence for the user.
            Some(_) if !message.is_empty() => Self::Refused(message),
            _ => Self::Bus(error),
        }
    }
}

impl From<zbus::fdo::Error> for ClientError {
    fn from(error: zbus::fdo::Error) -> Self {
        zbus::Error::FDO(Box::new(error)).into()
    }
}
