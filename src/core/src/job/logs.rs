// SPDX-License-Identifier: GPL-3.0-or-later
//! Making a job's output safe to show and bounded to keep.
//!
//! A job's output is shown in other people's terminals and apps, so terminal control
//! sequences (which can retitle windows, rewrite the screen or, on some terminals, inject
//! input) are removed before it leaves the machine; and a job that prints in a loop must not
//! fill the disk or the network, so output is rate-limited with explicit drop markers.

mod limiter;

#[cfg(test)]
mod tests;

pub use limiter::{drop_marker, LogLimiter, DEFAULT_LOG_BURST, DEFAULT_LOG_CAP, DEFAULT_LOG_RATE};

/// Longest OSC, DCS, SOS, PM or APC string swallowed; past it the machine resets and shows
/// the rest as text, so an unterminated string cannot hide the remaining output for ever.
pub const MAX_ESCAPE_STRING: usize = 4 << 10;
/// Longest CSI sequence swallowed (real ones are a few bytes).
const MAX_CSI: usize = 256;

const ESC: u8 = 0x1b;
const BEL: u8 = 0x07;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Ground,
    /// After ESC.
    Escape,
    /// After ESC and intermediate bytes (0x20–0x2f), as in `ESC ( B`.
    EscapeIntermediate,
    /// Inside `ESC [`, with the bytes seen so far.
    Csi(usize),
    /// Inside a string (OSC when `bel_ends`), with its length so far.
    Text {
        bel_ends: bool,
        len: usize,
    },
    /// ESC inside a string: `\` ends it.
    TextEscape {
        bel_ends: bool,
        len: usize,
    },
    /// After a 0xC2 lead byte, which may start a C1 control (U+0080–U+009F).
    C2,
}

/// Streaming filter that removes terminal control sequences from output, keeping UTF-8
/// text, `\n` and `\t`; `\r\n` and a lone `\r` become `\n`.
///
/// State carries over between [`Neutraliser::feed`] calls, so a sequence split across two
/// reads is still removed; memory is constant whatever the input.
#[derive(Debug, Clone)]
pub struct Neutraliser {
    state: State,
    /// A `\r` was just turned into `\n`: a `\n` right after it is the same line end.
    after_cr: bool,
}

impl Default for Neutraliser {
    fn default() -> Self {
        Self::new()
    }
}

impl Neutraliser {
    /// A filter at the start of a stream.
    pub fn new() -> Self {
        Neutraliser {
            state: State::Ground,
            after_cr: false,
        }
    }

    /// Filters `input`, appending what may be shown to `out`.
    pub fn feed(&mut self, input: &[u8], out: &mut Vec<u8>) {
        for &b in input {
            self.step(b, out);
        }
    }

    fn step(&mut self, b: u8, out: &mut Vec<u8>) {
        match self.state {
            State::Ground => self.ground(b, out),
            State::Escape => match b {
                b'[' => self.state = State::Csi(0),
                b']' => {
                    self.state = State::Text {
                        bel_ends: true,
                        len: 0,
                    }
                }
                b'P' | b'X' | b'^' | b'_' => {
                    self.state = State::Text {
                        bel_ends: false,
                        len: 0,
                    }
                }
                ESC => {}
                0x20..=0x2f => self.state = State::EscapeIntermediate,
                0x30..=0x7e => self.state = State::Ground,
                // Not a sequence after all: drop the ESC, treat the byte as text.
                _ => self.ground(b, out),
            },
            State::EscapeIntermediate => match b {
                0x20..=0x2f => {}
                0x30..=0x7e => self.state = State::Ground,
                _ => self.ground(b, out),
            },
            State::Csi(len) => match b {
                0x40..=0x7e => self.state = State::Ground,
                0x20..=0x3f if len < MAX_CSI => self.state = State::Csi(len + 1),
                0x20..=0x3f => self.state = State::Ground,
                // A control or non-ASCII byte aborts the sequence, as terminals do.
                _ => self.ground(b, out),
            },
            State::Text { bel_ends, len } => match b {
                BEL if bel_ends => self.state = State::Ground,
                ESC => self.state = State::TextEscape { bel_ends, len },
                _ if len >= MAX_ESCAPE_STRING => self.state = State::Ground,
                _ => {
                    self.state = State::Text {
                        bel_ends,
                        len: len + 1,
                    }
                }
            },
            State::TextEscape { .. } if b == b'\\' => self.state = State::Ground,
            // ESC then anything else ends the string and starts a new sequence.
            State::TextEscape { .. } => {
                self.state = State::Escape;
                self.step(b, out);
            }
            State::C2 => {
                self.state = State::Ground;
                if !(0x80..=0x9f).contains(&b) {
                    self.emit(0xc2, out);
                    self.ground(b, out);
                }
            }
        }
    }

    fn ground(&mut self, b: u8, out: &mut Vec<u8>) {
        self.state = State::Ground;
        match b {
            ESC => self.state = State::Escape,
            b'\r' => {
                self.emit(b'\n', out);
                self.after_cr = true;
            }
            b'\n' if self.after_cr => self.after_cr = false,
            b'\n' | b'\t' => self.emit(b, out),
            0x00..=0x1f | 0x7f => {}
            0xc2 => self.state = State::C2,
            _ => self.emit(b, out),
        }
    }

    fn emit(&mut self, b: u8, out: &mut Vec<u8>) {
        self.after_cr = false;
        out.push(b);
    }
}
