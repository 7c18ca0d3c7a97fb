// SPDX-License-Identifier: GPL-3.0-or-later
use rand_core::OsRng;

use super::*;

const TH: [u8; 32] = [0x42; 32];

#[test]
fn sign_and_verify() {
    let node = NodeIdentity::generate(&mut OsRng);
    let auth = node.sign(Role::Server, &TH);
    let verified = auth.verify(Role::Server, &TH).unwrap();
    assert_eq!(verified.node_id, node.node_id());
    assert_eq!(verified.public_key, node.public_key());
    assert_eq!(NodeAuth::parse(&auth.encode()), Ok(auth));
}

#[test]
fn the_signature_binds_role_and_transcript() {
    let node = NodeIdentity::from_seed(&[7; 32]);
    let auth = node.sign(Role::Client, &TH);
    // Reflected to the other role, or replayed on another connection (another TH).
    assert_eq!(auth.verify(Role::Server, &TH), Err(NodeAuthError::BadSignature));
    assert_eq!(
        auth.verify(Role::Client, &[0x43; 32]),
        Err(NodeAuthError::BadSignature)
    );
    // Another key presenting this signature.
    let mut stolen = auth.clone();
    stolen.node_pub = NodeIdentity::from_seed(&[8; 32]).public_key();
    assert_eq!(stolen.verify(Role::Client, &TH), Err(NodeAuthError::BadSignature));
    let mut flipped = auth;
    flipped.signature[10] ^= 1;
    assert_eq!(
        flipped.verify(Role::Client, &TH),
        Err(NodeAuthError::BadSignature)
    );
}

#[test]
fn weak_and_invalid_keys_are_refused() {
    let node = NodeIdentity::from_seed(&[7; 32]);
    let mut auth = node.sign(Role::Client, &TH);
    // The identity point (small order).
    auth.node_pub = [0; 32];
    auth.node_pub[0] = 1;
    assert_eq!(auth.verify(Role::Client, &TH), Err(NodeAuthError::BadPublicKey));
    assert_eq!(NodeAuth::parse(&[0; 95]), Err(NodeAuthError::WrongLength));
}

#[test]
fn seeds_round_trip_and_ids_are_hashes() {
    let node = NodeIdentity::generate(&mut OsRng);
    let again = NodeIdentity::from_seed(&node.expose_seed());
    assert_eq!(again.public_key(), node.public_key());
    let digest = Sha256::digest(node.public_key());
    assert_eq!(node.node_id().as_bytes(), &digest[..16]);
    assert_eq!(node.node_id().to_string().len(), 32);
    assert!(!format!("{node:?}").contains(&hex::encode(*node.expose_seed())));
    assert_eq!(signed_message(Role::Server, &TH).len(), 14 + 1 + 32);
}

#[test]
fn pins() {
    let a = [1u8; 32];
    let b = [2u8; 32];
    assert_eq!(check_pin(None, &a), Pin::New);
    assert_eq!(check_pin(Some(&a), &a), Pin::Match);
    assert_eq!(check_pin(Some(&a), &b), Pin::Changed);
}
