// SPDX-License-Identifier: GPL-3.0-or-later
//! Tests of the output neutraliser and the log limiter.

use super::*;

fn clean(input: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    Neutraliser::new().feed(input, &mut out);
    out
}

/// Feeds one byte at a time: every split point must give the same result.
fn clean_bytewise(input: &[u8]) -> Vec<u8> {
    let mut n = Neutraliser::new();
    let mut out = Vec::new();
    for b in input {
        n.feed(std::slice::from_ref(b), &mut out);
    }
    out
}

#[test]
fn text_tabs_and_newlines_pass_and_utf8_is_kept() {
    let text = "epoch 1\tloss 0.5\ncafé ✓ 日本\n".as_bytes();
    assert_eq!(clean(text), text);
}

#[test]
fn escape_sequences_are_removed() {
    let cases: &[(&[u8], &[u8])] = &[
        (b"\x1b[31mred\x1b[0m", b"red"),
        (b"a\x1b[2J\x1b[Hb", b"ab"),
        (b"\x1b[?1049h\x1b[38;5;196mx", b"x"),
        (b"\x1b]0;evil title\x07after", b"after"),
        (b"\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\", b"link"),
        (b"\x1bP1$r0m\x1b\\ok", b"ok"),
        (b"\x1b_apc\x1b\\\x1b^pm\x1b\\\x1bXsos\x1b\\z", b"z"),
        (b"\x1bcreset\x1b7saved\x1b8", b"resetsaved"),
        (b"\x1b(Bcharset", b"charset"),
        (b"\x1b\x1b[1mx", b"x"),
    ];
    for (input, want) in cases {
        assert_eq!(clean(input), *want, "{input:?}");
        assert_eq!(clean_bytewise(input), *want, "bytewise {input:?}");
    }
}

#[test]
fn controls_del_and_c1_are_removed() {
    assert_eq!(clean(b"a\x00b\x07c\x08d\x7fe\x0cf"), b"abcdef");
    // U+009B is the 8-bit CSI and U+0085 NEL; both go, other U+00xx letters stay.
    assert_eq!(
        clean("x\u{9b}31my\u{85}z é\u{a0}".as_bytes()),
        "x31myz é\u{a0}".as_bytes()
    );
    assert_eq!(clean_bytewise("\u{80}\u{9f}ok".as_bytes()), b"ok");
    assert_eq!(clean("\u{c2}\u{a9}".as_bytes()), "\u{c2}\u{a9}".as_bytes());
}

#[test]
fn carriage_returns_become_line_ends() {
    assert_eq!(clean(b"a\r\nb\r\n"), b"a\nb\n");
    assert_eq!(clean(b"10%\r20%\r30%\n"), b"10%\n20%\n30%\n");
    assert_eq!(clean_bytewise(b"a\r\nb"), b"a\nb");
    assert_eq!(clean(b"a\n\nb"), b"a\n\nb");
    assert_eq!(clean(b"a\r\r\nb"), b"a\n\nb");
}

#[test]
fn a_split_sequence_is_still_removed() {
    let mut n = Neutraliser::new();
    let mut out = Vec::new();
    n.feed(b"a\x1b", &mut out);
    n.feed(b"]0;ti", &mut out);
    n.feed(b"tle\x1b", &mut out);
    n.feed(b"\\b\xc2", &mut out);
    n.feed(b"\x9bc\r", &mut out);
    n.feed(b"\nd", &mut out);
    assert_eq!(out, b"abc\nd");
}

#[test]
fn an_unterminated_osc_is_bounded() {
    let mut input = b"\x1b]0;".to_vec();
    input.extend(std::iter::repeat_n(b'x', MAX_ESCAPE_STRING + 10));
    input.extend_from_slice(b"\nvisible");
    let out = clean(&input);
    assert!(
        out.ends_with(b"\nvisible"),
        "the output after a runaway string comes back"
    );
    assert!(out.len() < 64);
}

#[test]
fn a_runaway_csi_is_bounded() {
    let mut input = b"\x1b[".to_vec();
    input.extend(std::iter::repeat_n(b'1', 1000));
    input.extend_from_slice(b"mX");
    let out = clean(&input);
    assert!(out.ends_with(b"mX") && out.len() < 1000);
}

#[test]
fn a_control_byte_aborts_a_csi() {
    assert_eq!(clean(b"\x1b[1\nrest"), b"\nrest");
}

#[test]
fn the_marker_has_the_agreed_form() {
    assert_eq!(drop_marker(42), "\n[partagpu: 42 bytes of output dropped]\n");
}

#[test]
fn output_within_the_burst_passes_whole() {
    let mut l = LogLimiter::new(10, 100, 1000);
    let mut out = Vec::new();
    l.offer(0, &[b'a'; 60], &mut out);
    l.offer(0, &[b'b'; 40], &mut out);
    assert_eq!(out.len(), 100);
    assert_eq!(l.dropped(), 0);
    l.finish(&mut out);
    assert_eq!(out.len(), 100, "no marker when nothing was dropped");
}

#[test]
fn output_over_the_rate_is_dropped_then_marked() {
    let mut l = LogLimiter::new(10, 100, 1000);
    let mut out = Vec::new();
    l.offer(0, &[b'a'; 150], &mut out);
    assert_eq!(out, vec![b'a'; 100]);
    assert_eq!(l.dropped(), 50);
    l.offer(500, &[b'b'; 20], &mut out); // 5 bytes refilled in 500 ms
    assert_eq!(l.dropped(), 65);
    let mut want = vec![b'a'; 100];
    want.extend_from_slice(drop_marker(50).as_bytes());
    want.extend_from_slice(b"bbbbb");
    assert_eq!(out, want);
    l.finish(&mut out);
    want.extend_from_slice(drop_marker(15).as_bytes());
    assert_eq!(out, want);
}

#[test]
fn the_cut_prefers_a_line_end() {
    let mut l = LogLimiter::new(0, 10, 1000);
    let mut out = Vec::new();
    l.offer(0, b"line1\nline2 and more", &mut out);
    assert_eq!(out, b"line1\n");
    assert_eq!(l.dropped(), 14);
}

#[test]
fn the_total_cap_is_final() {
    let mut l = LogLimiter::new(1_000_000, 1_000_000, 30);
    let mut out = Vec::new();
    for t in 0..10 {
        l.offer(t * 1000, &[b'x'; 10], &mut out);
    }
    assert_eq!(l.written(), 30);
    assert_eq!(l.dropped(), 70);
    assert_eq!(out, vec![b'x'; 30]);
    l.finish(&mut out);
    assert!(out.ends_with(drop_marker(70).as_bytes()));
}

#[test]
fn refill_never_exceeds_the_burst_and_tolerates_a_clock_going_back() {
    let mut l = LogLimiter::new(DEFAULT_LOG_RATE, DEFAULT_LOG_BURST, DEFAULT_LOG_CAP);
    let mut out = Vec::new();
    l.offer(1_000_000, &vec![0u8; (DEFAULT_LOG_BURST + 1) as usize], &mut out);
    assert_eq!(l.dropped(), 1);
    l.offer(10_000_000, &vec![0u8; (DEFAULT_LOG_BURST * 2) as usize], &mut out);
    assert_eq!(l.dropped(), 1 + DEFAULT_LOG_BURST);
    out.clear();
    l.offer(5, b"back in time", &mut out);
    assert!(out.is_empty() && l.dropped() == 1 + DEFAULT_LOG_BURST + 12);
    l.offer(10_001_000, b"ok", &mut out);
    assert!(out.ends_with(b"ok"));
}
