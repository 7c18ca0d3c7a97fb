// SPDX-License-Identifier: GPL-3.0-or-later
use super::*;

fn hellos() -> ([u8; CLIENT_HELLO_LEN], [u8; SERVER_HELLO_LEN]) {
    let mut ch = [0x11; CLIENT_HELLO_LEN];
    ch[..8].copy_from_slice(b"PGR1\x01\x01\x00\x00");
    let mut sh = [0x22; SERVER_HELLO_LEN];
    sh[..8].copy_from_slice(b"PGR1\x01\x01\x00\x00");
    (ch, sh)
}

fn schedule(ch: &[u8; CLIENT_HELLO_LEN], sh: &[u8; SERVER_HELLO_LEN]) -> KeySchedule {
    KeySchedule::new(&[0x33; 32], transcript_hash(ch, sh))
}

#[test]
fn finished_values_verify_and_depend_on_each_other() {
    let (ch, sh) = hellos();
    let ks = schedule(&ch, &sh);
    let sf = ks.server_finished();
    let cf = ks.client_finished(&sf);
    assert_ne!(sf, cf);
    assert_eq!(ks.verify_server_finished(&sf), Ok(()));
    assert_eq!(ks.verify_client_finished(&sf, &cf), Ok(()));
    assert_eq!(ks.verify_client_finished(&cf, &cf), Err(FinishedMismatch));
    assert_eq!(ks.verify_server_finished(&sf[..31]), Err(FinishedMismatch));
    let mut flipped = sf;
    flipped[31] ^= 1;
    assert_eq!(ks.verify_server_finished(&flipped), Err(FinishedMismatch));
}

#[test]
fn a_changed_hello_byte_changes_every_secret() {
    // Downgrade protection (§4.1): a field rewritten in transit gives the two ends different
    // transcripts, so the Finished of one end does not verify at the other.
    let (ch, sh) = hellos();
    let honest = schedule(&ch, &sh);
    for index in [4, 5, 6, 7] {
        let mut tampered = ch;
        tampered[index] ^= 0x01;
        let other = schedule(&tampered, &sh);
        assert_eq!(
            other.verify_server_finished(&honest.server_finished()),
            Err(FinishedMismatch)
        );
        assert_ne!(other.expose_prk(), honest.expose_prk());
    }
    let mut tampered = sh;
    tampered[6] = 0x80;
    assert_eq!(
        schedule(&ch, &tampered).verify_server_finished(&honest.server_finished()),
        Err(FinishedMismatch)
    );
}

#[test]
fn secrets_are_distinct() {
    let (ch, sh) = hellos();
    let ks = schedule(&ch, &sh);
    let c2s = ks.traffic_secret(Direction::ClientToServer);
    let s2c = ks.traffic_secret(Direction::ServerToClient);
    let all = [
        *c2s.expose_secret(),
        *s2c.expose_secret(),
        *c2s.key(),
        *s2c.key(),
        *ks.exporter(),
        *c2s.next().expose_secret(),
        *c2s.next().next().expose_secret(),
        *ks.expose_prk(),
    ];
    for (i, a) in all.iter().enumerate() {
        for b in &all[i + 1..] {
            assert_ne!(a, b);
        }
    }
    assert_ne!(*c2s.iv(), *s2c.iv());
    assert_eq!(c2s.next().expose_secret(), c2s.next().expose_secret());
}

#[test]
fn debug_shows_no_secret() {
    let (ch, sh) = hellos();
    let ks = schedule(&ch, &sh);
    let ts = ks.traffic_secret(Direction::ClientToServer);
    assert_eq!(format!("{ts:?}"), "TrafficSecret(<redacted>)");
    assert!(!format!("{ks:?}").contains(&hex::encode(ks.expose_prk())));
}
