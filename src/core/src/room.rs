// SPDX-License-Identifier: GPL-3.0-or-later
//! Rooms: the human room code, the random room id, and what is derived from them (PGR/1 §2).
//!
//! A room is joined with a 4-word code drawn by a CSPRNG from one BIP-39 list (English or
//! French). The code is normalised ([`normalise`]) and validated locally, so a typo never costs
//! an online guess; the SPAKE2 password is `Argon2id(normalised code, salt = room_id)`
//! ([`RoomPassword::derive`]). Node keys are shown to humans as [`fingerprint`] words.
//!
//! Nothing here does I/O: randomness is a parameter, and the word lists are compiled in.

mod code;
mod fingerprint;
mod id;
mod normalise;
mod password;
mod wordlist;

pub use code::{CodeError, RoomCode, CODE_WORDS, MAX_CODE_INPUT_BYTES};
pub use fingerprint::{fingerprint, fingerprint_words, FINGERPRINT_WORDS};
pub use id::{RoomId, RoomIdError, ROOM_ID_LEN};
pub use normalise::{fold_accents, is_separator, normalise};
pub use password::{RoomPassword, ARGON2_M_KIB, ARGON2_OUTPUT_LEN, ARGON2_P, ARGON2_T};
pub use wordlist::{Language, WORDLIST_LEN};
