// SPDX-License-Identifier: GPL-3.0-or-later
//! Fingerprints of node public keys as words, for humans to compare (PGR/1 §5.4).

use sha2::{Digest, Sha256};

use crate::room::wordlist::Language;

/// Words in a fingerprint: 6 × 11 = 66 bits of SHA-256(public key).
pub const FINGERPRINT_WORDS: usize = 6;

/// The fingerprint words of an Ed25519 public key: the first 66 bits of SHA-256(key), 11
/// bits per word, most significant first, as words of the English list (whatever the UI
/// language, so two people with different languages can compare).
#[must_use]
pub fn fingerprint_words(public_key: &[u8; 32]) -> [&'static str; FINGERPRINT_WORDS] {
    let digest = Sha256::digest(public_key);
    let mut head = [0u8; 16];
    head[..9].copy_from_slice(&digest[..9]);
    let bits = u128::from_be_bytes(head);
    std::array::from_fn(|i| {
        let shift = 128 - 11 * (i + 1);
        Language::English.word(((bits >> shift) & 0x7FF) as usize)
    })
}

/// [`fingerprint_words`] joined with single spaces.
#[must_use]
pub fn fingerprint(public_key: &[u8; 32]) -> String {
    fingerprint_words(public_key).join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprint_is_stable_and_key_dependent() {
        let a = fingerprint(&[0u8; 32]);
        assert_eq!(a, fingerprint(&[0u8; 32]));
        assert_ne!(a, fingerprint(&[1u8; 32]));
        assert_eq!(a.split(' ').count(), FINGERPRINT_WORDS);
    }

    #[test]
    fn bits_are_taken_most_significant_first() {
        // SHA-256 of 32 zero bytes starts 66 68 7a ad f8 62 bd 77 6c ...
        let digest = Sha256::digest([0u8; 32]);
        let first = (usize::from(digest[0]) << 3) | (usize::from(digest[1]) >> 5);
        assert_eq!(fingerprint_words(&[0u8; 32])[0], Language::English.word(first));
    }
}
