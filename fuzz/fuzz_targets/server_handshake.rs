// SPDX-License-Identifier: GPL-3.0-or-later
//! The server's handshake on arbitrary input (PGR/1 §3, §4, §7.2, §8.1):
//! `ServerHandshake::on_client_hello`, then `on_client_finished`, with the transcript
//! vector's room and server randomness.
//!
//! Input: the first 57 bytes are the ClientHello (all of it when shorter), the rest the
//! ClientFinished.
//!
//! Properties: nothing panics; a hello §3.1 refuses fails as that hello error before the room
//! lookup runs (no SPAKE2 work for malformed input); an unknown room is `UnknownRoom`; a
//! flight is a well-formed ServerHello ‖ SF and, for the vector's hello, exactly the vector's
//! flight; a ClientFinished of another size is `WrongLength`; the server accepts a CF only
//! when it is the honest client's (the vector's), and then TH is the vector's.
#![no_main]

use std::cell::Cell;

use libfuzzer_sys::fuzz_target;
use partagpu_core::protocol::{HandshakeError, HandshakeErrorKind, ServerHandshake};
use partagpu_fuzz::{reference_hello_check, transcript, FixedRng, REF_CLIENT_HELLO, REF_SERVER_HELLO};

fuzz_target!(|data: &[u8]| {
    let v = transcript();
    let (hello, cf) = data.split_at(data.len().min(57));
    let looked_up = Cell::new(false);
    let lookup = |room: &_| {
        looked_up.set(true);
        (*room == v.room_id).then(|| (v.epoch, v.room_password()))
    };
    let outcome = ServerHandshake::on_client_hello(hello, lookup, &mut FixedRng(v.server_rng_byte));
    let well_formed = reference_hello_check(hello, REF_CLIENT_HELLO);
    let (server, flight) = match (outcome, well_formed) {
        (Err(err), Err(hello_err)) => {
            assert_eq!(err, HandshakeError::Hello(hello_err));
            assert!(!looked_up.get(), "the room was looked up for a malformed hello");
            return;
        }
        (Err(err), Ok(())) => {
            assert!(looked_up.get());
            if hello[8..24] != *v.room_id.as_bytes() {
                assert_eq!(err, HandshakeError::UnknownRoom);
                assert_eq!(err.kind(), HandshakeErrorKind::WrongRoom);
            } else {
                // Only the SPAKE2 point can be wrong now.
                assert_eq!(err, HandshakeError::BadSpake2Message);
                assert_eq!(err.kind(), HandshakeErrorKind::Malformed);
            }
            return;
        }
        (Ok(_), Err(hello_err)) => panic!("accepted a hello §3.1 refuses ({hello_err:?})"),
        (Ok(accepted), Ok(())) => accepted,
    };
    assert_eq!(server.room_id(), v.room_id, "only the vector's room is known");
    assert_eq!(reference_hello_check(&flight[..41], REF_SERVER_HELLO), Ok(()));
    let honest_hello = hello == v.client_hello.as_slice();
    if honest_hello {
        assert_eq!(
            flight.as_slice(),
            v.server_flight,
            "the vector's hello, another flight"
        );
    }

    let honest_cf = honest_hello && cf == v.client_finished.as_slice();
    match server.on_client_finished(cf) {
        Ok(session) => {
            assert!(honest_cf, "a forged ClientFinished was accepted: {data:02x?}");
            assert_eq!(session.transcript_hash(), &v.th);
            assert_eq!((session.room_id(), session.epoch()), (v.room_id, v.epoch));
        }
        Err(err) => {
            assert!(!honest_cf, "the honest ClientFinished was refused: {err:?}");
            if cf.len() == 32 {
                assert_eq!(err, HandshakeError::WrongCode);
                assert_eq!(err.kind(), HandshakeErrorKind::WrongCode);
            } else {
                assert_eq!(err, HandshakeError::WrongLength);
            }
        }
    }
});
