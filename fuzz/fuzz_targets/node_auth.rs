// SPDX-License-Identifier: GPL-3.0-or-later
//! `NodeAuth::parse` and `NodeAuth::verify` (PGR/1 §5): the first record of every session.
//!
//! Input: `role 1 ‖ TH 32 ‖ seed 32 ‖ body` (short inputs read as zero-padded), and the whole
//! input is also parsed as a body on its own.
//!
//! Properties: nothing panics; `parse` accepts exactly 96 bytes and `encode(parse(x)) == x`;
//! a body verifies only where an honest signer made it: the vector's (for its TH and role)
//! or the one signed here with `seed` (so a mutated signature, a non-canonical `s`, another
//! role or another TH must all fail: no malleability, no cross-role reflection); what
//! `seed` signs always verifies, as its node id.
#![no_main]

use libfuzzer_sys::fuzz_target;
use partagpu_core::protocol::{NodeAuth, NodeAuthError, NodeIdentity, Role};
use partagpu_fuzz::{node_auth_vectors, role_of_byte, Input};

/// Whether `body` is an honest vector signature for `(role, th)`.
fn is_vector(body: &[u8], role: Role, th: &[u8; 32]) -> bool {
    node_auth_vectors()
        .iter()
        .any(|v| v.body == body && v.role == role && &v.th == th)
}

fn check_parse(body: &[u8]) -> Option<NodeAuth> {
    match NodeAuth::parse(body) {
        Ok(auth) => {
            assert_eq!(body.len(), 96);
            assert_eq!(auth.encode().as_slice(), body, "encode(parse(x)) != x");
            Some(auth)
        }
        Err(err) => {
            assert_ne!(body.len(), 96, "a 96-byte body was refused: {err:?}");
            assert_eq!(err, NodeAuthError::WrongLength);
            None
        }
    }
}

fuzz_target!(|data: &[u8]| {
    // The whole input as a body, against each vector's TH and role.
    if let Some(auth) = check_parse(data) {
        for v in node_auth_vectors() {
            let ok = auth.verify(v.role, &v.th).is_ok();
            assert_eq!(ok, is_vector(data, v.role, &v.th), "verdict on {data:02x?}");
        }
    }

    let mut input = Input::new(data);
    let role = role_of_byte(input.u8());
    let mut th = [0u8; 32];
    let got = input.take(32);
    th[..got.len()].copy_from_slice(got);
    let mut seed = [0u8; 32];
    let got = input.take(32);
    seed[..got.len()].copy_from_slice(got);
    let body = input.rest();

    // What an honest node with `seed` sends always verifies, and only for its role and TH.
    let identity = NodeIdentity::from_seed(&seed);
    let signed = identity.sign(role, &th);
    let verified = signed.verify(role, &th).expect("an honest NODE_AUTH verifies");
    assert_eq!(verified.node_id, identity.node_id());
    assert_eq!(verified.public_key, identity.public_key());
    assert_eq!(signed.verify(role.peer(), &th), Err(NodeAuthError::BadSignature));
    let mut other_th = th;
    other_th[usize::from(seed[0] % 32)] ^= 1 << (seed[1] % 8);
    assert_eq!(signed.verify(role, &other_th), Err(NodeAuthError::BadSignature));

    // The fuzzer's body: accepted only if it is one an honest signer produced.
    if let Some(auth) = check_parse(body) {
        match auth.verify(role, &th) {
            Ok(node) => {
                assert!(
                    body == signed.encode().as_slice() || is_vector(body, role, &th),
                    "a forged NODE_AUTH verified: {body:02x?} for role {role:?}, TH {th:02x?}"
                );
                assert_eq!(node.public_key.as_slice(), &body[..32]);
            }
            Err(err) => {
                assert!(matches!(
                    err,
                    NodeAuthError::BadPublicKey | NodeAuthError::BadSignature
                ));
                assert!(
                    body != signed.encode().as_slice() && !is_vector(body, role, &th),
                    "an honest NODE_AUTH was refused: {err:?}"
                );
            }
        }
    }
});
