// SPDX-License-Identifier: GPL-3.0-or-later
//! The two BIP-39 word lists, stored as published and folded once at first use (PGR/1 §2.2).
//!
//! The French file is published in Unicode NFD (accents as combining marks). The list the
//! protocol uses is each published word passed through the code normalisation of §2.3
//! (NFKC, lowercase, the fixed accent table): pure ASCII, sorted, no duplicates (tested).

use std::sync::LazyLock;

use crate::room::normalise::normalise_word;

/// Number of words in each list: 2048 = 2^11, so one word carries exactly 11 bits.
pub const WORDLIST_LEN: usize = 2048;

static ENGLISH_PUBLISHED: &str = include_str!("../../wordlists/english.txt");
static FRENCH_PUBLISHED: &str = include_str!("../../wordlists/french.txt");

static ENGLISH: LazyLock<Vec<String>> = LazyLock::new(|| fold_list(ENGLISH_PUBLISHED));
static FRENCH: LazyLock<Vec<String>> = LazyLock::new(|| fold_list(FRENCH_PUBLISHED));

fn fold_list(published: &str) -> Vec<String> {
    published
        .lines()
        .filter(|line| !line.is_empty())
        .map(normalise_word)
        .collect()
}

/// The language of a word list; a room code uses the list of its creator's language.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Language {
    /// The BIP-39 English list.
    English,
    /// The BIP-39 French list, accents folded to ASCII.
    French,
}

impl Language {
    /// Every list, in the order validation tries them (PGR/1 §2.4).
    pub const ALL: [Self; 2] = [Self::English, Self::French];

    /// The BCP-47 tag (`en`, `fr`).
    #[must_use]
    pub fn tag(self) -> &'static str {
        match self {
            Self::English => "en",
            Self::French => "fr",
        }
    }

    /// Parses [`Self::tag`]'s form.
    #[must_use]
    pub fn from_tag(tag: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|lang| lang.tag() == tag)
    }

    /// The folded list: 2048 ASCII words in ascending byte order.
    #[must_use]
    pub fn words(self) -> &'static [String] {
        match self {
            Self::English => &ENGLISH,
            Self::French => &FRENCH,
        }
    }

    /// The folded word at `index` (taken modulo 2048).
    #[must_use]
    pub fn word(self, index: usize) -> &'static str {
        &self.words()[index % WORDLIST_LEN]
    }

    /// Position of an already normalised word in the folded list.
    #[must_use]
    pub fn index_of(self, word: &str) -> Option<usize> {
        self.words()
            .binary_search_by(|probe| probe.as_str().cmp(word))
            .ok()
    }

    /// Whether an already normalised word is in the folded list.
    #[must_use]
    pub fn contains(self, word: &str) -> bool {
        self.index_of(word).is_some()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn lists_have_2048_ascii_lowercase_words_sorted() {
        for lang in Language::ALL {
            let words = lang.words();
            assert_eq!(words.len(), WORDLIST_LEN, "{lang:?}");
            assert!(words
                .iter()
                .all(|w| !w.is_empty() && w.bytes().all(|b| b.is_ascii_lowercase())));
            assert!(
                words.windows(2).all(|pair| pair[0] < pair[1]),
                "{lang:?} not strictly sorted"
            );
        }
    }

    #[test]
    fn folding_creates_no_collision_inside_a_list() {
        for lang in Language::ALL {
            let unique: HashSet<&String> = lang.words().iter().collect();
            assert_eq!(unique.len(), WORDLIST_LEN, "{lang:?}");
        }
    }

    #[test]
    fn four_letter_prefixes_are_unique_inside_a_list() {
        for lang in Language::ALL {
            let prefixes: HashSet<&str> = lang.words().iter().map(|w| &w[..w.len().min(4)]).collect();
            assert_eq!(prefixes.len(), WORDLIST_LEN, "{lang:?}");
        }
    }

    #[test]
    fn the_lists_share_123_words() {
        // Documented in PGR/1 §2.4: a code made only of shared words is valid in both lists,
        // which is harmless because the normalised string, not the language, is the secret.
        let english: HashSet<&String> = Language::English.words().iter().collect();
        let shared = Language::French
            .words()
            .iter()
            .filter(|w| english.contains(w))
            .count();
        assert_eq!(shared, 123);
        assert!(Language::English.contains("abandon") && Language::French.contains("abandon"));
    }

    #[test]
    fn french_accents_are_folded() {
        assert_eq!(Language::French.word(0), "abaisser");
        assert!(Language::French.contains("eleve"));
        assert!(!Language::French.words().iter().any(|w| w.contains('é')));
        assert_eq!(Language::English.index_of("zoo"), Some(2047));
    }

    #[test]
    fn tags_round_trip() {
        for lang in Language::ALL {
            assert_eq!(Language::from_tag(lang.tag()), Some(lang));
        }
        assert_eq!(Language::from_tag("de"), None);
    }
}
