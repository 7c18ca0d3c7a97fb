// SPDX-License-Identifier: GPL-3.0-or-later
//! Writes `tests/vectors/*.json` from fixed inputs. Run it only on purpose:
//! `cargo test -p partagpu-core --test generate_vectors -- --ignored`. The committed JSON is
//! the source of truth; `vectors.rs` checks the implementation against it.

mod support;

use serde::Serialize;
use support::{File, DIR};

#[path = "support/generate.rs"]
mod generate;
#[path = "support/generate_wire.rs"]
mod generate_wire;

fn write<T: Serialize>(name: &str, description: &str, cases: Vec<T>) {
    let file = File {
        description: description.to_owned(),
        cases,
    };
    let text = serde_json::to_string_pretty(&file).expect("vectors serialise") + "\n";
    std::fs::write(format!("{DIR}/{name}"), text).expect("vector directory is writable");
}

#[test]
#[ignore = "writes the committed vectors; run on purpose only"]
fn write_all_vectors() {
    write(
        "normalisation.json",
        "PGR/1 §2.3-§2.4: input_hex (UTF-8) -> normalised_hex (pipeline output), validity, \
         language or error kind and 1-based position",
        generate::normalisation(),
    );
    write(
        "argon2id.json",
        "PGR/1 §2.6: Argon2id v0x13(password = normalised code, salt = room_id), 32 bytes",
        generate::argon2id(),
    );
    write(
        "spake2.json",
        "PGR/1 §3.3, §12.3: SPAKE2-Ed25519 A/B; each side's RNG repeats one byte",
        generate::spake2(),
    );
    write(
        "key_schedule.json",
        "PGR/1 §4: ClientHello, ServerHello, K -> TH, PRK, SF, CF, traffic secrets, keys, IVs, \
         exporter, secrets after 1 and 2 KEY_UPDATEs",
        generate::key_schedule(),
    );
    write(
        "records.json",
        "PGR/1 §6: key, iv, dir, seq, type, body -> wire; cases with `error` must be refused",
        generate_wire::records(),
    );
    write(
        "node_auth.json",
        "PGR/1 §5: Ed25519 seed, TH, signer role -> public key, node id, signature, fingerprint",
        generate_wire::node_auth(),
    );
    write(
        "transcript.json",
        "PGR/1 §3-§6: a whole connection with fixed randomness, every byte on the wire",
        generate_wire::transcript(),
    );
}
