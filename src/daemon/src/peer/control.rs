// SPDX-License-Identifier: GPL-3.0-or-later
//! The HELLO bodies of a control connection (PGR/1 §6.4, §7.3): the client names the
//! connection's purpose, the server answers with the room's public facts.

pub use partagpu_core::job::wire::PURPOSE_JOB;
use serde::{Deserialize, Serialize};

/// The only protocol version.
pub const VERSION: u32 = 1;
/// The purpose of the connections this phase serves.
pub const PURPOSE_CONTROL: &str = "control";

/// The client's HELLO.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientHelloBody {
    /// What the connection is for (§6.9).
    pub purpose: String,
    /// Versions the client speaks.
    pub versions: Vec<u32>,
    /// Optional features (none yet).
    #[serde(default)]
    pub caps: Vec<String>,
    /// The sender's boot id (§7.5); absent from peers that keep no fleet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boot: Option<String>,
    /// The sender's peer port, so the other side can dial back (§7.5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
}

/// The room's public facts, as the server tells a member.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoomFacts {
    /// The label, if the creator gave one.
    pub label: Option<String>,
    /// The current epoch.
    pub epoch: u32,
}

/// The server's HELLO.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerHelloBody {
    /// The purpose accepted.
    pub purpose: String,
    /// The version chosen (a list of one).
    pub versions: Vec<u32>,
    /// Features in use.
    #[serde(default)]
    pub caps: Vec<String>,
    /// Room facts.
    pub room: RoomFacts,
    /// The server's boot id (§7.5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boot: Option<String>,
    /// The server's peer port.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
}

impl ClientHelloBody {
    /// A control connection's HELLO from a machine with boot id `boot` listening on `port`.
    #[must_use]
    pub fn control(boot: &str, port: u16) -> Self {
        Self {
            purpose: PURPOSE_CONTROL.to_owned(),
            versions: vec![VERSION],
            caps: Vec::new(),
            boot: Some(boot.to_owned()),
            port: Some(port),
        }
    }
}

impl ClientHelloBody {
    /// A job connection's HELLO (no boot id: it is not a member link).
    #[must_use]
    pub fn job() -> Self {
        Self {
            purpose: PURPOSE_JOB.to_owned(),
            versions: vec![VERSION],
            caps: Vec::new(),
            boot: None,
            port: None,
        }
    }
}

/// Why a HELLO was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HelloBodyError {
    /// Not the JSON of §6.4.
    #[error("the HELLO body is not valid")]
    Malformed,
    /// No common version.
    #[error("no common protocol version")]
    NoCommonVersion,
    /// A purpose this machine does not serve.
    #[error("unsupported connection purpose")]
    UnsupportedPurpose,
}

/// Parses and checks a client HELLO.
///
/// # Errors
/// [`HelloBodyError`].
pub fn parse_client_hello(body: &[u8]) -> Result<ClientHelloBody, HelloBodyError> {
    let hello: ClientHelloBody = serde_json::from_slice(body).map_err(|_| HelloBodyError::Malformed)?;
    if !hello.versions.contains(&VERSION) {
        return Err(HelloBodyError::NoCommonVersion);
    }
    if hello.purpose != PURPOSE_CONTROL && hello.purpose != PURPOSE_JOB {
        return Err(HelloBodyError::UnsupportedPurpose);
    }
    Ok(hello)
}

/// Parses and checks a server HELLO.
///
/// # Errors
/// [`HelloBodyError`].
pub fn parse_server_hello(body: &[u8]) -> Result<ServerHelloBody, HelloBodyError> {
    let hello: ServerHelloBody = serde_json::from_slice(body).map_err(|_| HelloBodyError::Malformed)?;
    if hello.versions != [VERSION] {
        return Err(HelloBodyError::NoCommonVersion);
    }
    if hello.purpose != PURPOSE_CONTROL && hello.purpose != PURPOSE_JOB {
        return Err(HelloBodyError::UnsupportedPurpose);
    }
    Ok(hello)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hellos_are_checked() {
        let good = serde_json::to_vec(&ClientHelloBody::control("00ff", 7655)).unwrap();
        let hello = parse_client_hello(&good).unwrap();
        assert_eq!((hello.purpose.as_str(), hello.port), ("control", Some(7655)));
        let bare = parse_client_hello(br#"{"purpose":"control","versions":[1]}"#).unwrap();
        assert_eq!((bare.boot, bare.port), (None, None), "peers without a fleet");
        assert_eq!(
            parse_client_hello(br#"{"purpose":"control","versions":[2]}"#),
            Err(HelloBodyError::NoCommonVersion)
        );
        assert_eq!(
            parse_client_hello(br#"{"purpose":"upload","versions":[1]}"#),
            Err(HelloBodyError::UnsupportedPurpose)
        );
        assert_eq!(parse_client_hello(b"\xff{"), Err(HelloBodyError::Malformed));
        let server = br#"{"purpose":"control","versions":[1],"caps":[],"room":{"label":null,"epoch":2}}"#;
        assert_eq!(parse_server_hello(server).unwrap().room.epoch, 2);
        assert!(parse_server_hello(br#"{"purpose":"control","versions":[1]}"#).is_err());
    }
}
