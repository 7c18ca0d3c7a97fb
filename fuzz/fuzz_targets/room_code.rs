// SPDX-License-Identifier: GPL-3.0-or-later
//! `RoomCode::parse` and `normalise` on arbitrary UTF-8 (PGR/1 §2.3, §2.4): what a user types.
//!
//! The input bytes are read as UTF-8, invalid sequences replaced (U+FFFD), so every input is
//! a string.
//!
//! Properties: nothing panics, error messages included; the normalised form has the §2.3
//! shape (words without separators, joined by single `-`); `parse` applies exactly §2.4 to
//! the words of `normalise`: too long, empty, word count, the first unknown word, the first
//! position no single list holds; a valid code is ASCII, equals `normalise(input)`, is a fixed
//! point of `normalise` and parses back to itself. An ASCII normalised form is always a fixed
//! point.
//!
//! `normalise` is NOT idempotent on every string: accents that NFKC only composes after the
//! fold (e.g. "É\u{301}" → "e\u{301}" → "e") need a second pass. Normalisation runs once on
//! what was typed, so this does not affect interoperability; set
//! PARTAGPU_FUZZ_STRICT_IDEMPOTENCE=1 to assert idempotence on every input anyway.
#![no_main]

use std::sync::LazyLock;

use libfuzzer_sys::fuzz_target;
use partagpu_core::room::{is_separator, normalise, CodeError, Language, RoomCode, MAX_CODE_INPUT_BYTES};

static STRICT_IDEMPOTENCE: LazyLock<bool> =
    LazyLock::new(|| std::env::var_os("PARTAGPU_FUZZ_STRICT_IDEMPOTENCE").is_some_and(|v| v == "1"));

fn in_any_list(word: &str) -> bool {
    Language::ALL.iter().any(|lang| lang.contains(word))
}

fn check(text: &str) {
    let normalised = normalise(text);
    let n = normalised.as_str();
    let words: Vec<&str> = if n.is_empty() {
        Vec::new()
    } else {
        n.split('-').collect()
    };
    for word in &words {
        assert!(!word.is_empty(), "empty word in {n:?}");
        assert!(!word.chars().any(is_separator), "separator left in {n:?}");
    }
    if n.is_ascii() || *STRICT_IDEMPOTENCE {
        assert_eq!(*normalise(n), *n, "normalise is not idempotent on {text:?}");
    }

    let parsed = RoomCode::parse(text);
    if let Err(err) = &parsed {
        // Messages are shown to users: building them must not panic either.
        let _ = err.to_string();
    }
    if text.len() > MAX_CODE_INPUT_BYTES {
        assert_eq!(parsed.as_ref().err(), Some(&CodeError::TooLong));
        return;
    }
    match words.len() {
        0 => return assert_eq!(parsed.as_ref().err(), Some(&CodeError::Empty)),
        4 => {}
        count => return assert_eq!(parsed.as_ref().err(), Some(&CodeError::WrongWordCount { count })),
    }
    let first_unknown = words.iter().position(|w| !in_any_list(w));
    match parsed {
        Ok(code) => {
            assert_eq!(first_unknown, None);
            assert_eq!(
                code.normalised_bytes(),
                n.as_bytes(),
                "parse and normalise disagree"
            );
            assert!(n.is_ascii(), "a valid code is ASCII: {n:?}");
            assert_eq!(code.expose_words().as_slice(), words.as_slice());
            assert!(words.iter().all(|w| code.language().contains(w)));
            let first_holding = Language::ALL
                .into_iter()
                .find(|lang| words.iter().all(|w| lang.contains(w)));
            assert_eq!(
                Some(code.language()),
                first_holding,
                "the first list holding all words"
            );
            let again = RoomCode::parse(n).expect("a normalised valid code parses");
            assert_eq!(again, code);
            assert_eq!(again.language(), code.language());
        }
        Err(CodeError::UnknownWord {
            position,
            word: _,
            suggestions,
        }) => {
            assert_eq!(
                Some(position - 1),
                first_unknown,
                "the first unknown word of {n:?}"
            );
            assert!(suggestions.len() <= 3);
            assert!(suggestions.iter().all(|s| in_any_list(s)), "{suggestions:?}");
        }
        Err(CodeError::MixedLists { position }) => {
            assert_eq!(first_unknown, None);
            assert!((2..=4).contains(&position), "{position}");
            let holds = |end: usize| {
                Language::ALL
                    .iter()
                    .any(|lang| words[..end].iter().all(|w| lang.contains(w)))
            };
            assert!(
                holds(position - 1) && !holds(position),
                "first mixed position of {n:?}"
            );
        }
        Err(err) => panic!("{err:?} for 4 words of at most 256 bytes: {text:?}"),
    }
}

fuzz_target!(|data: &[u8]| {
    check(&String::from_utf8_lossy(data));
});
