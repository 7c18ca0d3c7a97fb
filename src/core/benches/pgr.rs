// SPDX-License-Identifier: GPL-3.0-or-later
//! PGR/1 CPU costs, in-process and on one thread, each beside a baseline measured in the same
//! run so that the figures compare across machines (`bench/pgr` runs it; `docs/testing.md`):
//!
//! * a full handshake: ClientHello, the server's flight, ClientFinished, both sessions, and
//!   NODE_AUTH sealed, opened and verified each way; against one SHA-256 of 1 MiB;
//! * the record layer: seal + open of 16 KiB DATA bodies, in MiB/s of body; against a plain
//!   copy of the same bytes (memcpy);
//! * `RoomPassword::derive` (Argon2id, 19 MiB, t = 2); against the same SHA-256.
//!
//! Each figure is the median of several timed runs after warm-up runs, so that a busy machine
//! (a build next door) shifts it less than a mean would. The handshake's CPU time comes from
//! the thread's scheduler statistics, which do not count time spent waiting for a core.
//! Prints one JSON object on stdout and nothing else there.
//!
//! Run: `cargo bench -p partagpu-core --bench pgr` (a release build).

use std::hint::black_box;
use std::time::{Duration, Instant};

use partagpu_core::protocol::{
    ClientHandshake, Direction, NodeIdentity, Opener, RecordType, Sealer, ServerHandshake, TrafficSecret,
};
use partagpu_core::room::{RoomCode, RoomId, RoomPassword, ARGON2_M_KIB, ARGON2_P, ARGON2_T};
use rand_core::OsRng;
use sha2::{Digest, Sha256};

const HANDSHAKE_WARMUP: usize = 20;
const HANDSHAKE_RUNS: usize = 300;
const SHA_BYTES: usize = 1 << 20;
const SHA_WARMUP: usize = 3;
const SHA_RUNS: usize = 31;
const RECORD_BODY: usize = 16 * 1024;
/// Records per timed sample: 4 MiB of body, long enough for the clock, short enough to
/// take many samples.
const RECORDS_PER_SAMPLE: usize = 256;
const RECORD_WARMUP: usize = 3;
const RECORD_RUNS: usize = 21;
const ARGON2_WARMUP: usize = 1;
const ARGON2_RUNS: usize = 7;

const MIB: f64 = 1024.0 * 1024.0;

/// Runs `f` `warmup` times untimed, then `runs` times timed; returns the median duration.
fn median_of(warmup: usize, runs: usize, mut f: impl FnMut()) -> Duration {
    for _ in 0..warmup {
        f();
    }
    let mut samples: Vec<Duration> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed()
        })
        .collect();
    samples.sort_unstable();
    samples[samples.len() / 2]
}

/// CPU time this thread has run, from `/proc/thread-self/schedstat` (Linux; nanoseconds on
/// a core, waiting time excluded). `None` where the file is missing.
fn thread_cpu() -> Option<Duration> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns: u64 = text.split_whitespace().next()?.parse().ok()?;
    Some(Duration::from_nanos(ns))
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Rounds for the JSON: figures have 3-4 meaningful digits at best.
fn round(x: f64, digits: i32) -> f64 {
    let scale = 10f64.powi(digits);
    (x * scale).round() / scale
}

/// One whole connection set-up, as two machines do it, including node authentication.
fn handshake(password: &RoomPassword, alice: &NodeIdentity, bob: &NodeIdentity) {
    let room = RoomId::from_bytes([0x5C; 16]);
    let (client, hello) = ClientHandshake::start(room, 1, password, &mut OsRng);
    let (server, flight) =
        ServerHandshake::on_client_hello(&hello, |_| Some((1, password.clone())), &mut OsRng)
            .expect("the server accepts an honest hello");
    let (mut client, cf) = client
        .on_server_flight(&flight)
        .expect("the client accepts the honest flight");
    let mut server = server
        .on_client_finished(&cf)
        .expect("the server accepts the honest Finished");
    let from_client = client.seal_node_auth(alice).expect("first record");
    let from_server = server.seal_node_auth(bob).expect("first record");
    let record = server.open(&from_client).expect("opens");
    server.verify_node_auth(&record).expect("verifies");
    let record = client.open(&from_server).expect("opens");
    client.verify_node_auth(&record).expect("verifies");
    black_box((client, server));
}

fn main() {
    // `cargo bench` passes `--bench`; there are no options.
    let password = RoomPassword::from_bytes([7; 32]);
    let alice = NodeIdentity::generate(&mut OsRng);
    let bob = NodeIdentity::generate(&mut OsRng);

    // Baseline: SHA-256 of 1 MiB.
    let data = vec![0xA5u8; SHA_BYTES];
    let sha = median_of(SHA_WARMUP, SHA_RUNS, || {
        black_box(Sha256::digest(black_box(&data)));
    });

    // (a) Handshake: median wall time, and CPU time per handshake over the timed runs.
    for _ in 0..HANDSHAKE_WARMUP {
        handshake(&password, &alice, &bob);
    }
    let cpu_before = thread_cpu();
    let handshake_wall = median_of(0, HANDSHAKE_RUNS, || handshake(&password, &alice, &bob));
    let handshake_cpu = match (cpu_before, thread_cpu()) {
        (Some(before), Some(after)) => Some(ms(after.saturating_sub(before)) / HANDSHAKE_RUNS as f64),
        _ => None,
    };

    // (b) Record layer: seal + open of 16 KiB bodies through one direction's pair.
    let secret = TrafficSecret::from_bytes([0x42; 32]);
    let mut sealer = Sealer::new(Direction::ClientToServer, secret.clone());
    let mut opener = Opener::new(Direction::ClientToServer, secret);
    let body = vec![0x3Cu8; RECORD_BODY];
    let record = median_of(RECORD_WARMUP, RECORD_RUNS, || {
        for _ in 0..RECORDS_PER_SAMPLE {
            let wire = sealer.seal(RecordType::Data, black_box(&body)).expect("seals");
            black_box(opener.open(&wire).expect("opens"));
        }
    });
    // The same bytes, copied once each: what any transport costs at the least.
    let mut copy = vec![0u8; RECORD_BODY];
    let memcpy = median_of(RECORD_WARMUP, RECORD_RUNS, || {
        for _ in 0..RECORDS_PER_SAMPLE {
            copy.copy_from_slice(black_box(&body));
            black_box(&mut copy);
        }
    });
    let sample_mib = (RECORD_BODY * RECORDS_PER_SAMPLE) as f64 / MIB;
    let record_mib_s = sample_mib / record.as_secs_f64();
    let memcpy_mib_s = sample_mib / memcpy.as_secs_f64();

    // (c) Argon2id, as a join does it once.
    let code = RoomCode::parse("zoo zebra wrist abandon").expect("a valid code");
    let room = RoomId::from_bytes([0x5C; 16]);
    let argon2 = median_of(ARGON2_WARMUP, ARGON2_RUNS, || {
        black_box(RoomPassword::derive(black_box(&code), &room));
    });

    let report = serde_json::json!({
        "implementation": "rust",
        "handshake_ms": round(ms(handshake_wall), 4),
        "handshake_cpu_ms": handshake_cpu.map(|x| round(x, 4)),
        "handshake_runs": HANDSHAKE_RUNS,
        "sha256_1mib_ms": round(ms(sha), 4),
        "handshake_vs_sha256_1mib": round(handshake_wall.as_secs_f64() / sha.as_secs_f64(), 3),
        "record_body_bytes": RECORD_BODY,
        "record_mib_s": round(record_mib_s, 1),
        "memcpy_mib_s": round(memcpy_mib_s, 1),
        "record_vs_memcpy": round(record_mib_s / memcpy_mib_s, 5),
        "argon2id_ms": round(ms(argon2), 3),
        "argon2id_vs_sha256_1mib": round(argon2.as_secs_f64() / sha.as_secs_f64(), 2),
        "argon2id_params": { "m_kib": ARGON2_M_KIB, "t": ARGON2_T, "p": ARGON2_P },
    });
    println!("{report}");
}
