// SPDX-License-Identifier: GPL-3.0-or-later
//! Node identity: the Ed25519 key of a machine, its NODE_AUTH record and key pinning
//! (PGR/1 §5).

use std::fmt;

use ed25519_dalek::{Signature, Signer, SigningKey, VerifyingKey};
use rand_core::CryptoRngCore;
use sha2::{Digest, Sha256};
use zeroize::Zeroizing;

use crate::protocol::keys::HASH_LEN;
use crate::protocol::Role;

/// The signed context prefix (§5.2).
pub const NODE_AUTH_CONTEXT: &[u8] = b"PGR1 node-auth";
/// Bytes of a NODE_AUTH body: public key 32 ‖ signature 64.
pub const NODE_AUTH_LEN: usize = 96;
/// Bytes of a node id.
pub const NODE_ID_LEN: usize = 16;

/// `node_id = SHA-256(node_pub)[..16]`, shown as 32 hex digits (§5.3).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId([u8; NODE_ID_LEN]);

impl NodeId {
    /// The id of an Ed25519 public key.
    #[must_use]
    pub fn of_public_key(public_key: &[u8; 32]) -> Self {
        let digest = Sha256::digest(public_key);
        let mut id = [0u8; NODE_ID_LEN];
        id.copy_from_slice(&digest[..NODE_ID_LEN]);
        Self(id)
    }

    /// The raw bytes.
    #[must_use]
    pub fn as_bytes(&self) -> &[u8; NODE_ID_LEN] {
        &self.0
    }

    /// 32 lowercase hex digits.
    #[must_use]
    pub fn to_hex(&self) -> String {
        hex::encode(self.0)
    }
}

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_hex())
    }
}

impl fmt::Debug for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "NodeId({})", self.to_hex())
    }
}

/// This machine's Ed25519 key (the private half is zeroized on drop).
pub struct NodeIdentity(SigningKey);

impl NodeIdentity {
    /// A new random key.
    pub fn generate(rng: &mut impl CryptoRngCore) -> Self {
        Self(SigningKey::generate(rng))
    }

    /// The key of a stored 32-byte seed (§11).
    #[must_use]
    pub fn from_seed(seed: &[u8; 32]) -> Self {
        Self(SigningKey::from_bytes(seed))
    }

    /// The seed, for storing in the 0600 state file (§11).
    #[must_use]
    pub fn expose_seed(&self) -> Zeroizing<[u8; 32]> {
        Zeroizing::new(self.0.to_bytes())
    }

    /// The public key.
    #[must_use]
    pub fn public_key(&self) -> [u8; 32] {
        self.0.verifying_key().to_bytes()
    }

    /// This machine's node id.
    #[must_use]
    pub fn node_id(&self) -> NodeId {
        NodeId::of_public_key(&self.public_key())
    }

    /// The NODE_AUTH body for a connection where this machine has `role` (§5.2).
    #[must_use]
    pub fn sign(&self, role: Role, transcript_hash: &[u8; HASH_LEN]) -> NodeAuth {
        NodeAuth {
            node_pub: self.public_key(),
            signature: self.0.sign(&signed_message(role, transcript_hash)).to_bytes(),
        }
    }
}

impl fmt::Debug for NodeIdentity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NodeIdentity")
            .field("node_id", &self.node_id())
            .finish_non_exhaustive()
    }
}

/// `"PGR1 node-auth" ‖ role ‖ TH` (§5.2).
#[must_use]
pub fn signed_message(role: Role, transcript_hash: &[u8; HASH_LEN]) -> Vec<u8> {
    [NODE_AUTH_CONTEXT, &[role.byte()], transcript_hash].concat()
}

/// A NODE_AUTH body (§5.1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeAuth {
    /// The sender's Ed25519 public key.
    pub node_pub: [u8; 32],
    /// Its signature over [`signed_message`].
    pub signature: [u8; 64],
}

/// A peer whose NODE_AUTH verified.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VerifiedNode {
    /// Its node id.
    pub node_id: NodeId,
    /// Its public key, to pin or compare.
    pub public_key: [u8; 32],
}

/// Why a NODE_AUTH was refused: close the connection and journal it (§5.3).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NodeAuthError {
    /// The first record was not NODE_AUTH.
    #[error("the peer did not identify itself first")]
    NotNodeAuth,
    /// Not 96 bytes.
    #[error("the peer's identity record has the wrong size")]
    WrongLength,
    /// Not a usable Ed25519 public key.
    #[error("the peer's machine key is not a valid key")]
    BadPublicKey,
    /// The signature does not verify.
    #[error("the peer's identity signature is not valid for this connection")]
    BadSignature,
}

impl NodeAuth {
    /// The 96 body bytes.
    #[must_use]
    pub fn encode(&self) -> [u8; NODE_AUTH_LEN] {
        let mut out = [0u8; NODE_AUTH_LEN];
        out[..32].copy_from_slice(&self.node_pub);
        out[32..].copy_from_slice(&self.signature);
        out
    }

    /// Parses exactly 96 bytes.
    ///
    /// # Errors
    /// [`NodeAuthError::WrongLength`].
    pub fn parse(body: &[u8]) -> Result<Self, NodeAuthError> {
        if body.len() != NODE_AUTH_LEN {
            return Err(NodeAuthError::WrongLength);
        }
        let mut node_pub = [0u8; 32];
        node_pub.copy_from_slice(&body[..32]);
        let mut signature = [0u8; 64];
        signature.copy_from_slice(&body[32..]);
        Ok(Self { node_pub, signature })
    }

    /// Verifies (strictly: no small-order keys, canonical signatures) that the holder of
    /// `node_pub` signed this connection's TH as `signer_role`.
    ///
    /// # Errors
    /// [`NodeAuthError::BadPublicKey`] or [`NodeAuthError::BadSignature`].
    pub fn verify(
        &self,
        signer_role: Role,
        transcript_hash: &[u8; HASH_LEN],
    ) -> Result<VerifiedNode, NodeAuthError> {
        let key = VerifyingKey::from_bytes(&self.node_pub).map_err(|_| NodeAuthError::BadPublicKey)?;
        if key.is_weak() {
            return Err(NodeAuthError::BadPublicKey);
        }
        let signature = Signature::from_bytes(&self.signature);
        key.verify_strict(&signed_message(signer_role, transcript_hash), &signature)
            .map_err(|_| NodeAuthError::BadSignature)?;
        Ok(VerifiedNode {
            node_id: NodeId::of_public_key(&self.node_pub),
            public_key: self.node_pub,
        })
    }
}

/// What a presented key means for the pin of its node id (TOFU, §5.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pin {
    /// Never seen: pin it and show its fingerprint.
    New,
    /// The pinned key.
    Match,
    /// Another key than the pinned one: refuse and raise an alert.
    Changed,
}

/// Compares the key pinned for a node id (if any) with the presented one.
#[must_use]
pub fn check_pin(pinned: Option<&[u8; 32]>, presented: &[u8; 32]) -> Pin {
    match pinned {
        None => Pin::New,
        Some(key) if key == presented => Pin::Match,
        Some(_) => Pin::Changed,
    }
}

#[cfg(test)]
mod tests;
