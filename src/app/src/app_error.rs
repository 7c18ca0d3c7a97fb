// SPDX-License-Identifier: GPL-3.0-or-later
//! What can go wrong in the app, and the one place that turns it into a translated sentence
//! (the root component shows it as a toast).

use partagpu_client::ClientError;

use crate::i18n::{i18n, i18n_f};

/// A failed request or a local problem.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    /// The service refused or could not be reached.
    #[error(transparent)]
    Client(#[from] ClientError),
    /// The service sent a job list or record this app cannot read.
    #[error("unexpected job record: {0}")]
    Record(#[from] serde_json::Error),
    /// A local file operation (the artifacts folder).
    #[error("{0}")]
    Local(String),
    /// Not connected to the service yet.
    #[error("not connected to partagpud")]
    NotConnected,
}

/// A failure and what the user was doing, for the funnel.
#[derive(Debug)]
pub struct Failure {
    /// What was being done, already translated ("Could not pause").
    pub action: String,
    /// Why it failed.
    pub error: AppError,
}

impl Failure {
    /// `action` must come from `i18n`.
    pub fn new(action: String, error: impl Into<AppError>) -> Self {
        Self {
            action,
            error: error.into(),
        }
    }
}

/// The sentence a user reads. The service's own sentences are English (they are also what
/// the CLI and logs say); the part this app controls is translated around them.
#[must_use]
pub fn describe(error: &AppError) -> String {
    match error {
        AppError::Client(client) => describe_client(client),
        AppError::Record(_) => i18n("the service sent an answer this version of the app cannot read"),
        AppError::Local(message) => message.clone(),
        AppError::NotConnected => i18n("the PartaGPU service is not running"),
    }
}

fn describe_client(error: &ClientError) -> String {
    match error {
        ClientError::NoBus(_) => i18n("the system bus (D-Bus) cannot be reached"),
        ClientError::NotRunning => i18n("the PartaGPU service is not running"),
        ClientError::NotAuthorized(message) => i18n_f("not allowed ({})", &[message]),
        ClientError::WrongCode(_) => i18n("a member of the room refused this code: check the four words"),
        ClientError::RoomNotFound(message) => i18n_f("no such room on the network ({})", &[message]),
        ClientError::PeerFailed(message) => i18n_f("no member of the room could be reached ({})", &[message]),
        ClientError::AlreadyInRoom(_) => i18n("this machine is already in a room: leave it first"),
        ClientError::NotInRoom(_) => i18n("this machine is not in a room"),
        ClientError::InvalidArgument(message)
        | ClientError::StorageFailed(message)
        | ClientError::Refused(message) => message.clone(),
        ClientError::Artifact { name, problem } => i18n_f("artifact {}: {}", &[name, problem]),
        ClientError::Protocol(_) | ClientError::Bus(_) => {
            i18n_f("unexpected D-Bus error ({})", &[&error.to_string()])
        }
    }
}

/// The toast text: "Could not pause: the PartaGPU service is not running".
#[must_use]
pub fn toast_text(failure: &Failure) -> String {
    i18n_f("{}: {}", &[&failure.action, &describe(&failure.error)])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_service_sentence_is_kept_and_the_action_named() {
        let failure = Failure::new(
            "Could not change the limits".to_owned(),
            ClientError::InvalidArgument("CPU limit 300 % is above 100 %".into()),
        );
        assert_eq!(
            toast_text(&failure),
            "Could not change the limits: CPU limit 300 % is above 100 %"
        );
    }

    #[test]
    fn a_wrong_code_never_echoes_the_service_message() {
        // The service's message never holds the code, but the app's sentence is fixed anyway.
        let text = describe(&AppError::Client(ClientError::WrongCode("x".into())));
        assert!(text.contains("four words") && !text.contains('x'));
    }
}
