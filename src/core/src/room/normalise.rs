// SPDX-License-Identifier: GPL-3.0-or-later
//! Code normalisation, byte-identical in every implementation (PGR/1 §2.3).
//!
//! NFKC → lowercase (Unicode full mapping) → fold accents with the fixed table of
//! [`fold_accents`] → split on runs of [`is_separator`] (ignoring leading and trailing ones) →
//! re-join with `-` → UTF-8. The pipeline works on any string; whether the result is a valid
//! code is decided afterwards by [`crate::room::RoomCode::parse`].

use unicode_normalization::UnicodeNormalization;
use zeroize::Zeroizing;

/// The fixed accent table of PGR/1 §2.3, applied after lowercasing (so it has lowercase keys
/// only). Characters outside the table are kept as they are.
const FOLD_TABLE: [(char, &str); 17] = [
    ('à', "a"),
    ('â', "a"),
    ('ä', "a"),
    ('æ', "ae"),
    ('ç', "c"),
    ('è', "e"),
    ('é', "e"),
    ('ê', "e"),
    ('ë', "e"),
    ('î', "i"),
    ('ï', "i"),
    ('ô', "o"),
    ('ö', "o"),
    ('ù', "u"),
    ('û', "u"),
    ('ü', "u"),
    ('œ', "oe"),
];

/// The ASCII replacement of an accented lowercase letter, or `None` when `c` is not in the
/// fixed table (PGR/1 §2.3).
#[must_use]
pub fn fold_accents(c: char) -> Option<&'static str> {
    FOLD_TABLE
        .iter()
        .find(|(accented, _)| *accented == c)
        .map(|(_, ascii)| *ascii)
}

/// Whether `c` separates words: Unicode `White_Space`, `-` or `_` (PGR/1 §2.3).
#[must_use]
pub fn is_separator(c: char) -> bool {
    c.is_whitespace() || c == '-' || c == '_'
}

/// NFKC, lowercase and accent folding of one word (the pipeline without the split).
pub(crate) fn normalise_word(word: &str) -> String {
    let nfkc: String = word.nfkc().collect();
    let lower = Zeroizing::new(nfkc.to_lowercase());
    let mut out = String::with_capacity(lower.len());
    for c in lower.chars() {
        match fold_accents(c) {
            Some(ascii) => out.push_str(ascii),
            None => out.push(c),
        }
    }
    out
}

/// One word of a typed code: as typed (after NFKC only, for error messages) and normalised.
pub(crate) struct Token {
    /// The word after NFKC, before lowercasing and folding.
    pub(crate) typed: Zeroizing<String>,
    /// The normalised word.
    pub(crate) word: Zeroizing<String>,
}

/// Splits a typed code into normalised words (PGR/1 §2.3).
///
/// Splitting after NFKC and before lowercasing gives the same words as the pipeline's order
/// because lowercasing and folding neither create nor remove separators (tested).
pub(crate) fn tokens(input: &str) -> Vec<Token> {
    let nfkc: Zeroizing<String> = Zeroizing::new(input.nfkc().collect());
    nfkc.split(is_separator)
        .filter(|part| !part.is_empty())
        .map(|part| Token {
            typed: Zeroizing::new(part.to_owned()),
            word: Zeroizing::new(normalise_word(part)),
        })
        .collect()
}

/// The normalised form of any string: the exact pipeline of PGR/1 §2.3.
///
/// For a valid code this is the Argon2id input; use [`crate::room::RoomCode::parse`] to also
/// validate the words.
#[must_use]
pub fn normalise(input: &str) -> Zeroizing<String> {
    let nfkc: Zeroizing<String> = Zeroizing::new(input.nfkc().collect());
    let lower = Zeroizing::new(nfkc.to_lowercase());
    let mut folded = Zeroizing::new(String::with_capacity(lower.len()));
    for c in lower.chars() {
        match fold_accents(c) {
            Some(ascii) => folded.push_str(ascii),
            None => folded.push(c),
        }
    }
    let words: Vec<&str> = folded.split(is_separator).filter(|w| !w.is_empty()).collect();
    Zeroizing::new(words.join("-"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn via_tokens(input: &str) -> String {
        tokens(input)
            .iter()
            .map(|t| t.word.as_str())
            .collect::<Vec<_>>()
            .join("-")
    }

    #[test]
    fn pipeline_examples() {
        assert_eq!(*normalise("  Élève\t__ZOO--abandon  "), "eleve-zoo-abandon");
        // Full-width letters and the ideographic space fold through NFKC.
        assert_eq!(*normalise("ＡＢＡＮＤＯＮ\u{3000}zoo"), "abandon-zoo");
        // Decomposed accents (as in the published French file) compose first.
        assert_eq!(*normalise("e\u{301}le\u{300}ve"), "eleve");
        assert_eq!(*normalise("Œuvre ÆTHER"), "oeuvre-aether");
        assert_eq!(*normalise(" \n-_ "), "");
        // The examples of docs/protocol.md §2.3.
        assert_eq!(
            *normalise("  Élève\tZÉNITH__abaisser-zeste "),
            "eleve-zenith-abaisser-zeste"
        );
        assert_eq!(
            *normalise("ＡＢＡＮＤＯＮ ability able about"),
            "abandon-ability-able-about"
        );
    }

    #[test]
    fn characters_outside_the_table_are_kept() {
        assert_eq!(*normalise("ñandu"), "ñandu");
        assert_eq!(fold_accents('ÿ'), None);
        assert_eq!(fold_accents('É'), None, "the table is applied after lowercasing");
    }

    #[test]
    fn token_split_matches_the_pipeline() {
        for input in [
            "  Élève\t__ZOO--abandon  ",
            "ΣΑΣ-ΟΔΟΣ Σ",
            "İstanbul\u{00A0}straße",
            "ＡＢＡＮＤＯＮ\u{3000}zoo\u{FF0D}x\u{FF3F}y",
            "a\u{2003}b\u{200B}c",
        ] {
            assert_eq!(via_tokens(input), *normalise(input), "{input:?}");
        }
    }

    #[test]
    fn separators() {
        for c in [' ', '\t', '\n', '\u{a0}', '\u{3000}', '\u{2028}', '-', '_'] {
            assert!(is_separator(c), "{c:?}");
        }
        for c in ['\u{200B}', '\u{2010}', '\u{2013}', '.', ',', '\u{1c}'] {
            assert!(!is_separator(c), "{c:?}");
        }
    }
}
