// SPDX-License-Identifier: GPL-3.0-or-later
//! Suggestions for an unknown word, so a typo is fixed before any network attempt
//! (PGR/1 §2.4).
//!
//! Candidates come from the lists that hold every other (known) word of the code, or from
//! both lists when none does. First the words sharing the typed word's first four letters
//! (BIP-39 words are unique in their first four letters, so that is usually the one), then the
//! words at the smallest edit distance (at most 2), alphabetically within a distance.

use crate::room::normalise::Token;
use crate::room::wordlist::Language;

/// At most this many suggestions are made.
const MAX_SUGGESTIONS: usize = 3;

/// Words longer than this get prefix suggestions only.
const MAX_EDIT_WORD_CHARS: usize = 32;

/// Largest edit distance worth suggesting.
const MAX_EDIT_DISTANCE: usize = 2;

/// Up to three words the user may have meant instead of `tokens[position]`.
pub(super) fn suggestions(tokens: &[Token], position: usize) -> Vec<String> {
    let typed = tokens[position].word.as_str();
    let others = || {
        tokens
            .iter()
            .enumerate()
            .filter(move |(i, _)| *i != position)
            .map(|(_, t)| t.word.as_str())
            .filter(|w| Language::ALL.iter().any(|lang| lang.contains(w)))
    };
    let mut lists: Vec<Language> = Language::ALL
        .into_iter()
        .filter(|lang| others().all(|w| lang.contains(w)))
        .collect();
    if lists.is_empty() {
        lists = Language::ALL.to_vec();
    }

    let mut out: Vec<String> = Vec::new();
    let prefix: String = typed.chars().take(4).collect();
    for lang in &lists {
        for word in lang.words().iter().filter(|w| w.starts_with(&prefix)) {
            push_unique(&mut out, word);
        }
    }
    if out.len() < MAX_SUGGESTIONS && typed.chars().count() <= MAX_EDIT_WORD_CHARS {
        let mut near: Vec<(usize, &str)> = lists
            .iter()
            .flat_map(|lang| lang.words().iter())
            .map(|w| (edit_distance(typed, w), w.as_str()))
            .filter(|(d, _)| *d <= MAX_EDIT_DISTANCE)
            .collect();
        near.sort_unstable();
        for (_, word) in near {
            push_unique(&mut out, word);
        }
    }
    out.truncate(MAX_SUGGESTIONS);
    out
}

fn push_unique(out: &mut Vec<String>, word: &str) {
    if !out.iter().any(|w| w == word) {
        out.push(word.to_owned());
    }
}

/// Levenshtein distance over Unicode scalar values.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitution = diagonal + usize::from(ca != *cb);
            diagonal = row[j + 1];
            row[j + 1] = substitution.min(row[j] + 1).min(row[j + 1] + 1);
        }
    }
    row[b.len()]
}

/// The end of the unknown-word message: `"; did you mean …?"` or `"."`.
pub(super) fn sentence(suggestions: &[String]) -> String {
    match suggestions {
        [] => ".".to_owned(),
        [only] => format!("; did you mean \u{201c}{only}\u{201d}?"),
        many => format!(
            "; did you mean one of: {}?",
            many.iter()
                .map(|w| format!("\u{201c}{w}\u{201d}"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edit_distance_basics() {
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("zoo", "zoo"), 0);
        assert_eq!(edit_distance("élève", "eleve"), 2);
    }

    #[test]
    fn sentence_forms() {
        assert_eq!(sentence(&[]), ".");
        assert_eq!(sentence(&["zoo".into()]), "; did you mean \u{201c}zoo\u{201d}?");
        assert!(sentence(&["a".into(), "b".into()]).contains("one of"));
    }
}
