// SPDX-License-Identifier: GPL-3.0-or-later
//! The four-word code as it is typed: word-by-word validation and completion from the word
//! lists of `partagpu_core::room`, so a typo is seen before any guess is spent.
//!
//! Nothing here logs, and the joined code lives in a `Zeroizing` string.

use partagpu_core::room::{normalise, CodeError, Language, RoomCode, CODE_WORDS};
use zeroize::Zeroizing;

use crate::i18n::{i18n, i18n_f};

/// Most completions offered for one word.
pub const MAX_COMPLETIONS: usize = 6;

/// What one typed word is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WordState {
    /// Nothing typed.
    Empty,
    /// The start of these list words (at most [`MAX_COMPLETIONS`], best first).
    Incomplete(Vec<&'static str>),
    /// A word of a list.
    Valid,
    /// In no list, and the start of none.
    Unknown,
}

/// The list words that start like `typed` (accents folded as the protocol does), from both
/// lists, sorted, without repeats.
#[must_use]
pub fn completions(typed: &str, limit: usize) -> Vec<&'static str> {
    let prefix = normalise(typed);
    if prefix.is_empty() {
        return Vec::new();
    }
    let mut found: Vec<&'static str> = Language::ALL
        .into_iter()
        .flat_map(|language| {
            let words = language.words();
            // The lists are sorted: the matches are one run starting at the partition point.
            let start = words.partition_point(|w| w.as_str() < prefix.as_str());
            words[start..]
                .iter()
                .take_while(|w| w.starts_with(prefix.as_str()))
                .map(String::as_str)
        })
        .collect();
    found.sort_unstable();
    found.dedup();
    found.truncate(limit);
    found
}

/// The state of one typed word.
#[must_use]
pub fn word_state(typed: &str) -> WordState {
    let word = normalise(typed);
    if word.is_empty() {
        return WordState::Empty;
    }
    if Language::ALL.into_iter().any(|language| language.contains(&word)) {
        return WordState::Valid;
    }
    match completions(typed, MAX_COMPLETIONS) {
        found if found.is_empty() => WordState::Unknown,
        found => WordState::Incomplete(found),
    }
}

/// The four entries of the Join form.
#[derive(Debug, Default)]
pub struct CodeDraft {
    words: [Zeroizing<String>; CODE_WORDS],
}

impl CodeDraft {
    /// The text of entry `index` changed. A pasted code (several words in one entry) is
    /// spread over the entries from there; returns whether entries other than `index`
    /// changed, so the page shows them.
    pub fn set_word(&mut self, index: usize, text: &str) -> bool {
        let parts: Vec<&str> = text
            .split(partagpu_core::room::is_separator)
            .filter(|p| !p.is_empty())
            .collect();
        if parts.len() <= 1 || index >= CODE_WORDS {
            if let Some(word) = self.words.get_mut(index) {
                *word = Zeroizing::new(text.trim().to_owned());
            }
            return false;
        }
        for (offset, part) in parts.iter().take(CODE_WORDS - index).enumerate() {
            self.words[index + offset] = Zeroizing::new((*part).to_owned());
        }
        true
    }

    /// The word in entry `index`.
    #[must_use]
    pub fn word(&self, index: usize) -> &str {
        self.words.get(index).map_or("", |w| w.as_str())
    }

    /// Each entry's state.
    #[must_use]
    pub fn states(&self) -> Vec<WordState> {
        self.words.iter().map(|w| word_state(w)).collect()
    }

    /// The code to send, once the four words form one (same list).
    ///
    /// # Errors
    /// The translated sentence that says which word is wrong.
    pub fn code(&self) -> Result<Zeroizing<String>, String> {
        let joined = Zeroizing::new(
            self.words
                .iter()
                .map(|w| w.as_str())
                .collect::<Vec<_>>()
                .join(" "),
        );
        match RoomCode::parse(&joined) {
            Ok(_) => Ok(joined),
            Err(error) => Err(describe_code_error(&error)),
        }
    }

    /// Forgets the typed words.
    pub fn clear(&mut self) {
        *self = CodeDraft::default();
    }
}

/// The translated sentence for a refused code; it may quote the one wrong word, never the
/// whole code.
#[must_use]
pub fn describe_code_error(error: &CodeError) -> String {
    match error {
        CodeError::TooLong => i18n("The code is too long: it is four words."),
        CodeError::Empty => i18n("Type the four words of the room."),
        CodeError::WrongWordCount { count } => {
            i18n_f("A room code has 4 words, but {} were typed.", &[&count.to_string()])
        }
        CodeError::UnknownWord {
            position,
            word,
            suggestions,
        } if suggestions.is_empty() => i18n_f(
            "Word {} (“{}”) is not in the word list.",
            &[&position.to_string(), word],
        ),
        CodeError::UnknownWord {
            position,
            word,
            suggestions,
        } => i18n_f(
            "Word {} (“{}”) is not in the word list. Did you mean {}?",
            &[&position.to_string(), word, &suggestions.join(", ")],
        ),
        CodeError::MixedLists { position } => i18n_f(
            "Word {} is not from the same list as the words before it: all four words are English or all are French.",
            &[&position.to_string()],
        ),
    }
}

#[cfg(test)]
#[path = "code_entry_tests.rs"]
mod tests;
