// SPDX-License-Identifier: GPL-3.0-or-later
//! `ServerHello::parse`, then `ClientHandshake::on_server_flight` on arbitrary flights with a
//! fixed client: the transcript vector's (PGR/1 §3, §4.3, §12.7).
//!
//! Properties: nothing panics; the parser agrees with an independent reading of §3.1 and
//! `encode(parse(x)) == x`; the flight checks run in the order size, hello, SPAKE2 point, SF;
//! the only flight the client accepts is the honest server's, whose ClientFinished and TH are
//! the vector's (anything else accepted would be a forged ServerFinished).
#![no_main]

use libfuzzer_sys::fuzz_target;
use partagpu_core::protocol::{ClientHandshake, HandshakeError, ServerHello};
use partagpu_fuzz::{reference_hello_check, transcript, FixedRng, REF_SERVER_HELLO};

fuzz_target!(|data: &[u8]| {
    let parsed = ServerHello::parse(data);
    let expected = reference_hello_check(data, REF_SERVER_HELLO);
    match (&parsed, &expected) {
        (Ok(hello), Ok(())) => {
            assert_eq!(hello.encode().as_slice(), data, "encode(parse(x)) != x");
        }
        (Err(got), Err(want)) => assert_eq!(got, want, "wrong first failing check for {data:02x?}"),
        _ => panic!("ServerHello::parse({data:02x?}) = {parsed:?}, §3.1 says {expected:?}"),
    }
    if data.len() >= 32 {
        let mut spake2_msg = [0u8; 33];
        spake2_msg[0] = b'B';
        spake2_msg[1..].copy_from_slice(&data[..32]);
        let hello = ServerHello { spake2_msg };
        assert_eq!(ServerHello::parse(&hello.encode()), Ok(hello));
    }

    // The same bytes as a whole server flight, to the vector's client.
    let v = transcript();
    let (client, hello) = ClientHandshake::start(
        v.room_id,
        v.epoch,
        &v.room_password(),
        &mut FixedRng(v.client_rng_byte),
    );
    assert_eq!(
        hello.as_slice(),
        v.client_hello,
        "the fixed client is the vector's"
    );
    let outcome = client.on_server_flight(data);
    let honest = data == v.server_flight.as_slice();
    match outcome {
        Ok((session, cf)) => {
            assert!(
                honest,
                "a flight that is not the server's was accepted: {data:02x?}"
            );
            assert_eq!(cf.as_slice(), v.client_finished);
            assert_eq!(session.transcript_hash(), &v.th);
        }
        Err(err) => {
            assert!(!honest, "the honest flight was refused: {err:?}");
            if data.len() != 73 {
                assert_eq!(err, HandshakeError::WrongLength);
            } else if let Err(hello_err) = reference_hello_check(&data[..41], REF_SERVER_HELLO) {
                assert_eq!(err, HandshakeError::Hello(hello_err));
            } else {
                assert!(
                    matches!(err, HandshakeError::BadSpake2Message | HandshakeError::WrongCode),
                    "a well-formed flight failed with {err:?}"
                );
            }
        }
    }
});
