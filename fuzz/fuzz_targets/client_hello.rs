// SPDX-License-Identifier: GPL-3.0-or-later
//! `ClientHello::parse` on arbitrary bytes (PGR/1 §3.1, §8.1): the server's first contact
//! with an unauthenticated peer.
//!
//! Properties: it never panics; it accepts exactly what an independent reading of §3.1
//! accepts and refuses the rest with the same first failing check; `encode(parse(x)) == x`;
//! every refusal maps to the "malformed" reaction (close silently, no guess counted, §7.4).
#![no_main]

use libfuzzer_sys::fuzz_target;
use partagpu_core::protocol::{ClientHello, HandshakeError, HandshakeErrorKind};
use partagpu_core::room::RoomId;
use partagpu_fuzz::{reference_hello_check, REF_CLIENT_HELLO};

fuzz_target!(|data: &[u8]| {
    let parsed = ClientHello::parse(data);
    let expected = reference_hello_check(data, REF_CLIENT_HELLO);
    match (&parsed, &expected) {
        (Ok(hello), Ok(())) => {
            assert_eq!(hello.encode().as_slice(), data, "encode(parse(x)) != x");
            assert_eq!(hello.room_id.as_bytes().as_slice(), &data[8..24]);
            assert_eq!(hello.spake2_msg.as_slice(), &data[24..]);
        }
        (Err(got), Err(want)) => {
            assert_eq!(got, want, "wrong first failing check for {data:02x?}");
            let kind = HandshakeError::from(got.clone()).kind();
            assert_eq!(kind, HandshakeErrorKind::Malformed);
        }
        _ => panic!("ClientHello::parse({data:02x?}) = {parsed:?}, §3.1 says {expected:?}"),
    }

    // The other way round: any room id and side-A point encode to bytes that parse back.
    if data.len() >= 48 {
        let mut spake2_msg = [0u8; 33];
        spake2_msg[0] = b'A';
        spake2_msg[1..].copy_from_slice(&data[16..48]);
        let hello = ClientHello {
            room_id: RoomId::from_bytes(data[..16].try_into().expect("16 bytes")),
            spake2_msg,
        };
        assert_eq!(ClientHello::parse(&hello.encode()), Ok(hello));
    }
});
