// SPDX-License-Identifier: GPL-3.0-or-later
//! PGR/1, the encrypted peer protocol, without I/O (spec: `docs/protocol.md`).
//!
//! The pieces, in the order a connection uses them:
//! * [`hello`]: the fixed-size ClientHello and ServerHello (§3);
//! * [`handshake`]: the SPAKE2 handshake as two state machines fed with bytes (§3, §4, §7);
//! * [`keys`]: the key schedule (§4);
//! * [`record`]: the AES-256-GCM record layer and KEY_UPDATE (§6);
//! * [`node_auth`]: the Ed25519 NODE_AUTH record and key pinning (§5).
//!
//! The caller owns the socket, the clock and the random number generator: every function
//! takes bytes (and an RNG where one is needed) and returns bytes to send. Errors never carry
//! a secret; before authentication the caller closes the connection without answering
//! (§8.1).

pub mod handshake;
pub mod hello;
pub mod keys;
pub mod node_auth;
pub mod record;

pub use handshake::{ClientHandshake, HandshakeError, HandshakeErrorKind, ServerHandshake, Session};
pub use hello::{ClientHello, HelloError, ServerHello};
pub use keys::{KeySchedule, TrafficSecret};
pub use node_auth::{check_pin, NodeAuth, NodeAuthError, NodeId, NodeIdentity, Pin, VerifiedNode};
pub use record::{Direction, Opener, Record, RecordError, RecordType, Sealer};

/// Which end of the TCP connection: the initiator is the client (SPAKE2 side A), the
/// responder the server (side B) (PGR/1 §1.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    /// The TCP initiator, SPAKE2 side A; role byte `0x01` in NODE_AUTH (§5.2).
    Client,
    /// The TCP responder, SPAKE2 side B; role byte `0x02` in NODE_AUTH (§5.2).
    Server,
}

impl Role {
    /// The role byte signed in NODE_AUTH (PGR/1 §5.2).
    #[must_use]
    pub fn byte(self) -> u8 {
        match self {
            Self::Client => 0x01,
            Self::Server => 0x02,
        }
    }

    /// The other end.
    #[must_use]
    pub fn peer(self) -> Self {
        match self {
            Self::Client => Self::Server,
            Self::Server => Self::Client,
        }
    }

    /// The direction this role seals records in (PGR/1 §6.2).
    #[must_use]
    pub fn sending(self) -> Direction {
        match self {
            Self::Client => Direction::ClientToServer,
            Self::Server => Direction::ServerToClient,
        }
    }

    /// The direction this role opens records in.
    #[must_use]
    pub fn receiving(self) -> Direction {
        self.peer().sending()
    }
}

#[cfg(test)]
pub(crate) mod test_rng;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_and_directions() {
        assert_eq!(Role::Client.byte(), 0x01);
        assert_eq!(Role::Server.byte(), 0x02);
        assert_eq!(Role::Client.sending(), Direction::ClientToServer);
        assert_eq!(Role::Client.receiving(), Direction::ServerToClient);
        assert_eq!(Role::Server.sending(), Role::Client.receiving());
        assert_eq!(Role::Server.peer(), Role::Client);
    }
}
