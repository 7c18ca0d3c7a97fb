// SPDX-License-Identifier: GPL-3.0-or-later
use rand_core::{CryptoRng, OsRng, RngCore};

use super::*;

/// Replays a fixed byte string, for deterministic generation tests.
struct Replay(Vec<u8>, usize);

impl RngCore for Replay {
    fn next_u32(&mut self) -> u32 {
        rand_core::impls::next_u32_via_fill(self)
    }
    fn next_u64(&mut self) -> u64 {
        rand_core::impls::next_u64_via_fill(self)
    }
    fn fill_bytes(&mut self, dest: &mut [u8]) {
        for b in dest {
            *b = self.0[self.1 % self.0.len()];
            self.1 += 1;
        }
    }
    fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), rand_core::Error> {
        self.fill_bytes(dest);
        Ok(())
    }
}

impl CryptoRng for Replay {}

#[test]
fn generation_takes_11_bits_per_word() {
    let mut zeros = Replay(vec![0], 0);
    let code = RoomCode::generate(Language::English, &mut zeros);
    assert_eq!(code.expose_words(), ["abandon"; 4]);

    // 0xFF… gives index 2047 everywhere: the last word of the list.
    let code = RoomCode::generate(Language::French, &mut Replay(vec![0xFF], 0));
    assert_eq!(code.expose_words(), ["zoologie"; 4]);

    // 00000000001|00000000010|00000000011|00000000100|0000 → indices 1, 2, 3, 4.
    let bytes = vec![0x00, 0x20, 0x08, 0x01, 0x80, 0x40];
    let code = RoomCode::generate(Language::English, &mut Replay(bytes, 0));
    assert_eq!(code.expose_words(), ["ability", "able", "about", "above"]);
}

#[test]
fn generated_codes_parse_back() {
    for lang in Language::ALL {
        for _ in 0..50 {
            let code = RoomCode::generate(lang, &mut OsRng);
            let typed = code.expose_words().join(" ").to_uppercase();
            let parsed = RoomCode::parse(&typed).expect("a generated code is valid");
            assert_eq!(parsed, code);
            let all_shared = code.expose_words().iter().all(|w| Language::English.contains(w));
            assert!(parsed.language() == lang || (lang == Language::French && all_shared));
        }
    }
}

#[test]
fn accents_are_optional_and_french_is_recognised() {
    let with = RoomCode::parse("Élève  abaisser_ZESTE-zénith").unwrap();
    let without = RoomCode::parse("eleve abaisser zeste zenith").unwrap();
    assert_eq!(with, without);
    assert_eq!(with.language(), Language::French);
    assert_eq!(with.normalised_bytes(), b"eleve-abaisser-zeste-zenith");
}

#[test]
fn shared_words_are_english() {
    let code = RoomCode::parse("abandon animal badge bonus").unwrap();
    assert_eq!(code.language(), Language::English);
}

#[test]
fn word_count_errors() {
    assert_eq!(RoomCode::parse("  - _ "), Err(CodeError::Empty));
    assert_eq!(
        RoomCode::parse("zoo zoo zoo"),
        Err(CodeError::WrongWordCount { count: 3 })
    );
    assert_eq!(
        RoomCode::parse("zoo zoo zoo zoo zoo"),
        Err(CodeError::WrongWordCount { count: 5 })
    );
    assert_eq!(RoomCode::parse(&"a".repeat(257)), Err(CodeError::TooLong));
}

#[test]
fn unknown_word_names_position_word_and_suggestions() {
    let err = RoomCode::parse("abandon Abilty able about").unwrap_err();
    let CodeError::UnknownWord {
        position,
        word,
        suggestions,
    } = &err
    else {
        panic!("{err:?}");
    };
    assert_eq!((*position, word.as_str()), (2, "Abilty"));
    assert_eq!(suggestions, &["ability"]);
    let message = err.to_string();
    assert!(message.contains("word 2") && message.contains("Abilty") && message.contains("ability"));
    assert!(
        !message.contains("abandon"),
        "never echo the rest of the code: {message}"
    );
}

#[test]
fn suggestions_use_edit_distance_when_no_prefix_matches() {
    let err = RoomCode::parse("zoo zoo zoo xoo").unwrap_err();
    let CodeError::UnknownWord { suggestions, .. } = err else {
        panic!()
    };
    assert!(suggestions.contains(&"zoo".to_owned()), "{suggestions:?}");
    assert!(suggestions.len() <= 3);
}

#[test]
fn suggestions_stay_in_the_list_of_the_other_words() {
    // "abei" is a prefix in French ("abeille") but the other words are English only.
    let err = RoomCode::parse("zoo abeil zebra wrist").unwrap_err();
    let CodeError::UnknownWord { suggestions, .. } = err else {
        panic!()
    };
    assert!(!suggestions.contains(&"abeille".to_owned()), "{suggestions:?}");
}

#[test]
fn mixed_lists_are_refused_at_the_first_foreign_word() {
    // zoo: English only; abaisser: French only.
    let err = RoomCode::parse("zoo abandon abaisser zoo").unwrap_err();
    assert_eq!(err, CodeError::MixedLists { position: 3 });
    assert_eq!(err.kind(), "mixed-lists");
    assert_eq!(err.position(), Some(3));
}

#[test]
fn debug_redacts_the_words() {
    let code = RoomCode::parse("zoo zebra wrist abandon").unwrap();
    let debug = format!("{code:?}");
    assert!(!debug.contains("zoo") && debug.contains("redacted"), "{debug}");
}
