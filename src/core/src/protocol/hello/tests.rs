// SPDX-License-Identifier: GPL-3.0-or-later
use super::*;

fn client_hello() -> ClientHello {
    let mut spake2_msg = [0x11; SPAKE2_MSG_LEN];
    spake2_msg[0] = SIDE_A;
    ClientHello {
        room_id: RoomId::from_bytes([0xAB; 16]),
        spake2_msg,
    }
}

fn server_hello() -> ServerHello {
    let mut spake2_msg = [0x22; SPAKE2_MSG_LEN];
    spake2_msg[0] = SIDE_B;
    ServerHello { spake2_msg }
}

#[test]
fn layouts_are_fixed() {
    let ch = client_hello().encode();
    assert_eq!(ch.len(), 57);
    assert_eq!(&ch[..8], b"PGR1\x01\x01\x00\x00");
    assert_eq!(&ch[8..24], &[0xAB; 16]);
    assert_eq!(ch[24], b'A');
    let sh = server_hello().encode();
    assert_eq!(sh.len(), 41);
    assert_eq!(&sh[..8], b"PGR1\x01\x01\x00\x00");
    assert_eq!(sh[8], b'B');
}

#[test]
fn round_trips() {
    assert_eq!(ClientHello::parse(&client_hello().encode()), Ok(client_hello()));
    assert_eq!(ServerHello::parse(&server_hello().encode()), Ok(server_hello()));
}

#[test]
fn every_header_field_is_checked() {
    let good = client_hello().encode();
    let with = |i: usize, b: u8| {
        let mut bytes = good;
        bytes[i] = b;
        ClientHello::parse(&bytes)
    };
    assert_eq!(with(0, b'X'), Err(HelloError::BadMagic));
    assert_eq!(with(3, b'2'), Err(HelloError::BadMagic));
    assert_eq!(with(4, 2), Err(HelloError::BadVersion(2)));
    assert_eq!(with(5, 0), Err(HelloError::BadSuite(0)));
    assert_eq!(with(6, 0x80), Err(HelloError::BadFlags(0x8000)));
    assert_eq!(with(7, 1), Err(HelloError::BadFlags(1)));
    assert_eq!(with(24, SIDE_B), Err(HelloError::BadSpake2Side));
    assert_eq!(ClientHello::parse(&good[..56]), Err(HelloError::WrongLength));
    assert_eq!(
        ClientHello::parse(&[good.as_slice(), &[0]].concat()),
        Err(HelloError::WrongLength)
    );

    let sh = server_hello().encode();
    let mut bad = sh;
    bad[8] = SIDE_A;
    assert_eq!(ServerHello::parse(&bad), Err(HelloError::BadSpake2Side));
    bad = sh;
    bad[5] = 2;
    assert_eq!(ServerHello::parse(&bad), Err(HelloError::BadSuite(2)));
    assert_eq!(ServerHello::parse(&good), Err(HelloError::WrongLength));
}

#[test]
fn identities() {
    let (a, b) = spake2_identities(&RoomId::from_bytes([7; 16]), 0x0102_0304);
    assert_eq!(&a[..7], b"PGR1|A|");
    assert_eq!(&b[..7], b"PGR1|B|");
    assert_eq!(&a[7..23], &[7; 16]);
    assert_eq!(&a[23..], &[1, 2, 3, 4]);
    assert_eq!(a[7..], b[7..]);
}
