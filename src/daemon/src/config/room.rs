// SPDX-License-Identifier: GPL-3.0-or-later
//! `[room]` of the config file: the room a lab machine joins at its first boot, and the care
//! a file holding a room code needs. The code is a secret (PGR/1 §2): it is never in a log,
//! an error message or a `Debug` output, and only a root-owned 0600/0400 file may hold it.

use std::fmt;

use partagpu_core::room::{CodeError, RoomCode};
use serde::{Deserialize, Deserializer};
use zeroize::Zeroizing;

use crate::room::check_label;

/// `[room]`: both keys are required.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct RoomConfig {
    /// The label the room is announced with; how the machines of the lab find it.
    pub label: String,
    /// The four words, validated at load.
    pub code: ConfigCode,
}

/// The configured code: a validated [`RoomCode`] (zeroized on drop, compared in constant
/// time) whose `Debug` prints `<hidden>`, since `Config` is `Debug`.
#[derive(Clone, PartialEq, Eq)]
pub struct ConfigCode(RoomCode);

impl ConfigCode {
    /// The code, for joining or creating the room.
    #[must_use]
    pub fn code(&self) -> &RoomCode {
        &self.0
    }
}

impl fmt::Debug for ConfigCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<hidden>")
    }
}

/// Why a configured code is not valid, without the word: `CodeError::UnknownWord` quotes it,
/// and a word of the real code may sit next to the typo.
fn describe(error: &CodeError) -> String {
    match error.position() {
        Some(position) => format!(
            "[room] code: not a valid room code: word {position} is not in the word list, or not from the \
             same list as the others"
        ),
        None => format!("[room] code: not a valid room code: {error}"),
    }
}

impl<'de> Deserialize<'de> for ConfigCode {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let typed = Zeroizing::new(String::deserialize(deserializer)?);
        RoomCode::parse(&typed)
            .map(ConfigCode)
            .map_err(|error| serde::de::Error::custom(describe(&error)))
    }
}

impl RoomConfig {
    /// Refuses a label the room could not announce.
    pub(super) fn check(&self) -> Result<(), String> {
        if self.label.trim().is_empty() {
            return Err("[room] label: it must not be empty (the machines find the room by it)".into());
        }
        check_label(&self.label).map_err(|error| format!("[room] label: {error}"))
    }
}

/// Whether a file owned by `uid` with `mode` may hold a room code: root's, 0600 or 0400.
/// Anyone who reads the code can join the room and run jobs on every machine.
///
/// # Errors
/// A sentence that says what to fix.
pub fn check_code_file(uid: u32, mode: u32) -> Result<(), String> {
    let permissions = mode & 0o7777;
    if uid != 0 {
        return Err(format!(
            "it holds a room code but is owned by uid {uid}: it must be owned by root with mode 0600 or 0400"
        ));
    }
    if permissions != 0o600 && permissions != 0o400 {
        return Err(format!(
            "it holds a room code but has mode {permissions:04o}: it must be 0600 or 0400 (chmod 600)"
        ));
    }
    Ok(())
}

/// Renders a TOML error as `line L, column C: message`, never with the source line that
/// toml quotes by default (it could be the code), and with double-quoted strings (serde
/// quotes a misplaced string value) replaced by `"…"`.
pub(super) fn render_toml_error(error: &toml::de::Error, text: &str) -> String {
    let message = redact_strings(error.message().trim());
    match error.span() {
        Some(span) => {
            let before = &text.as_bytes()[..span.start.min(text.len())];
            let line = before.iter().filter(|b| **b == b'\n').count() + 1;
            let line_start = before.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
            let column = String::from_utf8_lossy(&before[line_start..]).chars().count() + 1;
            format!("line {line}, column {column}: {message}")
        }
        None => message,
    }
}

fn redact_strings(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut inside = false;
    let mut escaped = false;
    for c in message.chars() {
        if inside {
            match (escaped, c) {
                (false, '\\') => escaped = true,
                (false, '"') => {
                    inside = false;
                    out.push_str("…\"");
                }
                _ => escaped = false,
            }
        } else {
            out.push(c);
            inside = c == '"';
        }
    }
    if inside {
        out.push_str("…\"");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::{Config, ParseError};
    use super::*;

    const CODE: &str = "abandon ability able about";

    fn syntax_error(text: &str) -> String {
        match Config::parse(text) {
            Err(ParseError::Syntax(message)) => message,
            Err(ParseError::Invalid(error)) => error.to_string(),
            Ok(_) => panic!("{text:?} was accepted"),
        }
    }

    #[test]
    fn the_room_section_is_read() {
        let config = Config::parse(&format!("[room]\nlabel = \"Salle B12\"\ncode = \"{CODE}\"\n"))
            .ok()
            .unwrap();
        let room = config.room.unwrap();
        assert_eq!(room.label, "Salle B12");
        assert_eq!(room.code.code(), &RoomCode::parse(CODE).unwrap());
        assert!(Config::parse("").ok().unwrap().room.is_none());
    }

    #[test]
    fn errors_near_the_code_never_show_it() {
        let cases = [
            // Unterminated string: toml would print the line with a caret under it.
            (format!("[room]\nlabel = \"B12\"\ncode = \"{CODE}\n"), "line 3"),
            // A string where a table is expected: serde quotes the value.
            (
                format!("room = \"{CODE}\"\n"),
                "line 1, column 8: invalid type: string \"…\"",
            ),
            (format!("[sharing]\ncpu_percent = \"{CODE}\"\n"), "line 2"),
            (
                "[room]\nlabel = \"B12\"\ncode = \"abandon abilty able about\"".into(),
                "word 2",
            ),
            (format!("[room]\ncode = \"{CODE}\""), "missing field `label`"),
            ("[room]\nlabel = \"B12\"".into(), "missing field `code`"),
            (
                format!("[room]\nlabel = \" \"\ncode = \"{CODE}\""),
                "must not be empty",
            ),
            (
                format!("[room]\nlabel = \"B12\"\ncode = \"{CODE}\"\nepoch = 2"),
                "unknown field `epoch`",
            ),
        ];
        for (text, says) in cases {
            let message = syntax_error(&text);
            assert!(message.contains(says), "{text:?}: {message}");
            for word in ["abandon", "ability", "abilty", "able", "about"] {
                assert!(!message.contains(word), "{text:?}: {message}");
            }
        }
    }

    #[test]
    fn a_code_in_a_readable_file_is_refused_but_the_rest_is_used() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("partagpu.toml");
        let text = format!("display_name = \"pc-1\"\n[room]\nlabel = \"B12\"\ncode = \"{CODE}\"\n");
        std::fs::write(&path, text).unwrap();
        let root = rustix::process::geteuid().is_root();
        for (mode, accepted) in [(0o644, false), (0o640, false), (0o600, root), (0o400, root)] {
            std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(mode)).unwrap();
            let config = Config::load(&path).unwrap();
            assert_eq!(config.display_name.as_deref(), Some("pc-1"));
            assert_eq!(config.room.is_some(), accepted, "mode {mode:o}");
            match &config.room_refused {
                Some(reason) => {
                    assert!(!accepted && reason.contains("partagpu.toml"), "{reason}");
                    assert!(!reason.contains("abandon"), "{reason}");
                }
                None => assert!(accepted, "mode {mode:o} accepted"),
            }
        }
    }

    #[test]
    fn the_example_file_parses_and_so_do_its_commented_values() {
        let example = include_str!("../../../../data/partagpu.example.toml");
        assert_eq!(Config::parse(example).ok(), Some(Config::default()));
        // Every commented key uncommented: all valid except the placeholder code, which the
        // service must refuse rather than use.
        let uncommented: String = example
            .lines()
            .map(|line| match line.strip_prefix('#') {
                Some(rest) if rest.starts_with(|c: char| c.is_ascii_alphabetic() || c == '[') => rest,
                _ => line,
            })
            .map(|line| format!("{line}\n"))
            .collect();
        let message = syntax_error(&uncommented);
        assert!(
            message.contains("[room] code: not a valid room code: word 1"),
            "{message}"
        );
        let (before_room, _) = uncommented.split_once("\n[room]\n").unwrap();
        let config = Config::parse(before_room).ok().unwrap();
        assert_eq!(config.jobs.runtimes.len(), 1);
        assert_eq!(config.sharing.cpu_percent, Some(50));
    }

    #[test]
    fn the_code_debugs_as_hidden() {
        let code = ConfigCode(RoomCode::parse("abandon ability able about").unwrap());
        let room = RoomConfig {
            label: "B12".into(),
            code,
        };
        let debug = format!("{room:?}");
        assert!(debug.contains("<hidden>") && debug.contains("B12"), "{debug}");
        assert!(
            !debug.contains("abandon") && !debug.contains("ability"),
            "{debug}"
        );
    }

    #[test]
    fn only_root_0600_or_0400_may_hold_a_code() {
        assert!(check_code_file(0, 0o100_600).is_ok());
        assert!(check_code_file(0, 0o100_400).is_ok());
        for (uid, mode, says) in [
            (0, 0o100_644, "mode 0644"),
            (0, 0o100_640, "mode 0640"),
            (0, 0o100_604, "mode 0604"),
            (0, 0o100_700, "mode 0700"),
            (1000, 0o100_600, "uid 1000"),
        ] {
            let error = check_code_file(uid, mode).unwrap_err();
            assert!(error.contains(says), "{uid} {mode:o}: {error}");
        }
    }

    #[test]
    fn strings_in_messages_are_redacted() {
        assert_eq!(
            redact_strings(r#"invalid type: string "abandon ability", expected u32"#),
            r#"invalid type: string "…", expected u32"#
        );
        assert_eq!(redact_strings(r#"a "b\"c" d "e"#), r#"a "…" d "…""#);
        assert_eq!(redact_strings("unknown field `cod`"), "unknown field `cod`");
    }

    #[test]
    fn a_misspelt_word_is_located_but_not_quoted() {
        let error = RoomCode::parse("abandon abilty able about").unwrap_err();
        let message = describe(&error);
        assert!(message.contains("word 2"), "{message}");
        assert!(
            !message.contains("abilty") && !message.contains("abandon"),
            "{message}"
        );
        let message = describe(&RoomCode::parse("abandon ability able").unwrap_err());
        assert!(message.contains("4 words, but 3"), "{message}");
    }
}
