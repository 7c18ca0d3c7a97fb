// SPDX-License-Identifier: GPL-3.0-or-later

use super::*;

#[test]
fn words_are_checked_one_by_one() {
    assert_eq!(word_state(""), WordState::Empty);
    assert_eq!(word_state("abandon"), WordState::Valid);
    // French words are typed with or without accents.
    assert_eq!(word_state("Élève"), WordState::Valid);
    assert_eq!(word_state("eleve"), WordState::Valid);
    assert_eq!(word_state("zzzz"), WordState::Unknown);
    match word_state("aband") {
        WordState::Incomplete(found) => assert_eq!(found, vec!["abandon"]),
        other => panic!("{other:?}"),
    }
}

#[test]
fn completions_come_from_both_lists_sorted_and_bounded() {
    let found = completions("ab", MAX_COMPLETIONS);
    assert!(found.len() <= MAX_COMPLETIONS && !found.is_empty());
    assert!(found.windows(2).all(|pair| pair[0] < pair[1]));
    assert!(found.iter().all(|w| w.starts_with("ab")));
    // "abaisser" is French only, "abandon" in both lists, "ability" English only.
    let all = completions("ab", 100);
    assert!(all.contains(&"abaisser") && all.contains(&"abandon") && all.contains(&"ability"));
    assert!(completions("", 5).is_empty());
}

#[test]
fn a_pasted_code_fills_the_entries() {
    let mut draft = CodeDraft::default();
    assert!(draft.set_word(0, "abandon ability able about"));
    assert_eq!((draft.word(0), draft.word(3)), ("abandon", "about"));
    assert!(draft.code().is_ok());
    assert!(!draft.set_word(3, "zzzz"));
    let error = draft.code().unwrap_err();
    assert!(error.contains('4') && error.contains("zzzz"), "{error}");
    // Only the wrong word is quoted, never the code.
    assert!(!error.contains("abandon"));
    draft.clear();
    assert_eq!(draft.word(0), "");
}

#[test]
fn mixed_lists_are_refused_with_the_position() {
    let mut draft = CodeDraft::default();
    // "ability" is English only, "abaisser" French only.
    draft.set_word(0, "ability abaisser abandon abandon");
    let error = draft.code().unwrap_err();
    assert!(error.contains('2'), "{error}");
}
