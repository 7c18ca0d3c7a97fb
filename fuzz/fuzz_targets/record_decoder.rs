// SPDX-License-Identifier: GPL-3.0-or-later
//! The record layer's receiving side (PGR/1 §6): `ciphertext_len`, `open_record` and the
//! stateful `Opener`, compared with an independent §6 reader (`partagpu_fuzz::RefKeys`).
//!
//! First input byte even: one stateless record, `dir 1 ‖ seq 8 ‖ wire`, opened with the key
//! and IV of `records.json` (its cases are the seeds, error cases included).
//!
//! First byte odd: a connection. The rest is a list of operations, each making one record for
//! the Opener: raw bytes, an authentic record of any type byte (forged with the reference
//! sealer, so unknown types and KEY_UPDATEs with a body arrive authenticated), an honest
//! record, one with a flipped bit, one for the other direction, one skipping a sequence
//! number, a replay of the last accepted record, a truncated or extended one.
//!
//! Properties: nothing panics; every verdict (record or exact error) is the reference's;
//! after a refused record the receive counter and key have not moved (§6.5, checked through
//! `seq()`/`key_updates()` and by the next honest record still opening); after an accepted
//! one they moved exactly as §6.6 says; an accepted record re-sealed by partagpu-core's own
//! Sealer at the same state gives back the same bytes (`encode(parse(x)) == x`).
#![no_main]

use libfuzzer_sys::fuzz_target;
use partagpu_core::protocol::keys::TrafficSecret;
use partagpu_core::protocol::record::{ciphertext_len, open_record, seal_record};
use partagpu_core::protocol::{Direction, Opener, RecordError, RecordType, Sealer};
use partagpu_fuzz::{Input, RefKeys, RECORD_VECTOR_IV, RECORD_VECTOR_KEY, REF_KEY_UPDATE, REF_MAX_BODY};

/// Most operations one input runs: enough for several KEY_UPDATEs, short enough to keep
/// executions fast.
const MAX_OPS: usize = 64;

fn direction_of(byte: u8) -> Direction {
    if byte & 1 == 1 {
        Direction::ClientToServer
    } else {
        Direction::ServerToClient
    }
}

/// `ciphertext_len` against §6.1 for the first two bytes of `wire`.
fn check_header(wire: &[u8]) {
    if let [a, b, ..] = *wire {
        let len = u16::from_be_bytes([a, b]);
        let got = ciphertext_len([a, b]);
        if len < 17 {
            assert_eq!(got, Err(RecordError::TooShort));
        } else {
            assert_eq!(got, Ok(usize::from(len)));
        }
    }
}

fn stateless(input: &mut Input) {
    let direction = direction_of(input.u8());
    let seq = input.u64();
    let wire = input.rest();
    check_header(wire);
    let reference = RefKeys::new(&RECORD_VECTOR_KEY, &RECORD_VECTOR_IV);
    let expected = reference.open(direction.byte(), seq, wire);
    let got = open_record(&RECORD_VECTOR_KEY, &RECORD_VECTOR_IV, direction, seq, wire);
    match (&got, &expected) {
        (Ok(record), Ok((record_type, body))) => {
            assert_eq!((&record.record_type, &record.body), (record_type, body));
            let again = seal_record(
                &RECORD_VECTOR_KEY,
                &RECORD_VECTOR_IV,
                direction,
                seq,
                record.record_type,
                &record.body,
            )
            .expect("an opened record can be sealed again");
            assert_eq!(again, wire, "encode(parse(x)) != x");
        }
        (Err(got), Err(want)) => assert_eq!(got, want),
        _ => panic!("open_record = {got:?}, §6 says {expected:?} for {wire:02x?}"),
    }
}

/// The receiving direction as §6.2 and §6.6 describe it, kept beside the Opener.
struct Model {
    direction: Direction,
    secret: TrafficSecret,
    keys: RefKeys,
    seq: u64,
    updates: u64,
}

impl Model {
    fn new(direction: Direction, secret: TrafficSecret, updates: u64) -> Self {
        let keys = RefKeys::new(&secret.key(), &secret.iv());
        Self {
            direction,
            secret,
            keys,
            seq: 0,
            updates,
        }
    }

    fn dir(&self) -> u8 {
        self.direction.byte()
    }

    /// The record an honest peer sends next.
    fn seal(&self, type_byte: u8, body: &[u8]) -> Vec<u8> {
        self.keys.seal(self.dir(), self.seq, type_byte, body)
    }

    /// A record was accepted: the next sequence number, or the next key after KEY_UPDATE.
    fn accept(&mut self, record_type: RecordType) {
        if record_type.byte() == REF_KEY_UPDATE {
            *self = Self::new(self.direction, self.secret.next(), self.updates + 1);
        } else {
            self.seq += 1;
        }
    }
}

/// A body of at most [`REF_MAX_BODY`] bytes taken from the input (its length from 2 bytes).
fn body<'a>(input: &mut Input<'a>) -> &'a [u8] {
    let want = usize::from(input.u16()).min(REF_MAX_BODY);
    input.take(want)
}

/// A §6.4 type and a body it may carry (a KEY_UPDATE's is empty).
fn honest<'a>(input: &mut Input<'a>) -> (RecordType, &'a [u8]) {
    let record_type = RecordType::ALL[usize::from(input.u8()) % RecordType::ALL.len()];
    let body = body(input);
    if record_type == RecordType::KeyUpdate {
        (record_type, &[])
    } else {
        (record_type, body)
    }
}

fn stateful(input: &mut Input) {
    let direction = direction_of(input.u8());
    let secret = TrafficSecret::from_bytes([0x42; 32]);
    let mut opener = Opener::new(direction, secret.clone());
    // partagpu-core's own sender, kept in lockstep with every accepted record.
    let mut sealer = Sealer::new(direction, secret.clone());
    let mut model = Model::new(direction, secret, 0);
    let mut last_accepted: Option<Vec<u8>> = None;

    for _ in 0..MAX_OPS {
        if input.is_empty() {
            break;
        }
        let wire = match input.u8() % 8 {
            0 => {
                let header = input.u16();
                let rest = input.take(usize::from(header));
                [&header.to_be_bytes()[..], rest].concat()
            }
            1 => {
                let type_byte = input.u8();
                model.seal(type_byte, body(input))
            }
            2 => {
                let (record_type, body) = honest(input);
                model.seal(record_type.byte(), body)
            }
            3 => {
                let (record_type, body) = honest(input);
                let mut wire = model.seal(record_type.byte(), body);
                let at = usize::from(input.u16()) % wire.len();
                wire[at] ^= input.u8().max(1);
                wire
            }
            4 => {
                let (record_type, body) = honest(input);
                let other = if direction == Direction::ClientToServer {
                    2
                } else {
                    1
                };
                model.keys.seal(other, model.seq, record_type.byte(), body)
            }
            5 => {
                let (record_type, body) = honest(input);
                let ahead = u64::from(input.u8()) + 1;
                model
                    .keys
                    .seal(model.dir(), model.seq + ahead, record_type.byte(), body)
            }
            6 => match &last_accepted {
                Some(wire) => wire.clone(),
                None => continue,
            },
            _ => {
                let (record_type, body) = honest(input);
                let mut wire = model.seal(record_type.byte(), body);
                let cut = usize::from(input.u16());
                if cut & 1 == 0 {
                    wire.truncate(wire.len().saturating_sub(cut / 2 + 1));
                } else {
                    wire.extend_from_slice(input.take(cut / 2 + 1));
                }
                wire
            }
        };
        check_header(&wire);

        let expected = model.keys.open(model.dir(), model.seq, &wire);
        let got = opener.open(&wire);
        match (&got, &expected) {
            (Ok(record), Ok((record_type, body))) => {
                assert_eq!((&record.record_type, &record.body), (record_type, body));
                let again = sealer
                    .seal(record.record_type, &record.body)
                    .expect("an opened record can be sealed again");
                assert_eq!(again, wire, "encode(parse(x)) != x at seq {}", model.seq);
                model.accept(record.record_type);
                last_accepted = Some(wire);
            }
            (Err(got), Err(want)) => assert_eq!(got, want, "for {wire:02x?}"),
            _ => panic!("Opener::open = {got:?}, §6 says {expected:?} for {wire:02x?}"),
        }
        // §6.5: a refused record moves nothing; §6.6: an accepted one moves exactly this.
        assert_eq!(opener.seq(), model.seq, "receive counter after {got:?}");
        assert_eq!(opener.key_updates(), model.updates, "key after {got:?}");
        assert_eq!((sealer.seq(), sealer.key_updates()), (model.seq, model.updates));
        assert_eq!(opener.direction(), direction);
    }

    // The Opener is still usable: the next honest record opens.
    let probe = model.seal(RecordType::Ping.byte(), b"");
    let record = opener.open(&probe).expect("the next honest record opens");
    assert_eq!(record.record_type, RecordType::Ping);
}

fuzz_target!(|data: &[u8]| {
    let mut input = Input::new(data);
    if input.u8() & 1 == 0 {
        stateless(&mut input);
    } else {
        stateful(&mut input);
    }
});
