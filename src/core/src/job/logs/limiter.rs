// SPDX-License-Identifier: GPL-3.0-or-later
//! A token bucket for a job's output, with a total cap and explicit drop markers.

/// Output rate a job may sustain, in bytes per second.
pub const DEFAULT_LOG_RATE: u64 = 1 << 20;
/// Output a job may print at once after being quiet.
pub const DEFAULT_LOG_BURST: u64 = 4 << 20;
/// Output kept for one job in all; later output is dropped.
pub const DEFAULT_LOG_CAP: u64 = 100 << 20;

/// The line put where output was dropped, so a reader knows the log has a hole.
pub fn drop_marker(bytes: u64) -> String {
    format!("\n[partagpu: {bytes} bytes of output dropped]\n")
}

/// Limits a job's output to a rate, with bursts, and to a total; markers say what was
/// dropped and count against neither.
#[derive(Debug, Clone)]
pub struct LogLimiter {
    /// Refill per second, in bytes.
    rate: u64,
    /// Bucket size, in thousandths of a byte (so a 1 ms refill is exact).
    burst_milli: u128,
    tokens_milli: u128,
    last_ms: Option<u64>,
    total_cap: u64,
    written: u64,
    dropped: u64,
    /// Dropped since the last marker.
    pending: u64,
}

impl LogLimiter {
    /// A limiter with a full bucket.
    pub fn new(rate_bytes_per_s: u64, burst_bytes: u64, total_cap: u64) -> Self {
        let burst_milli = u128::from(burst_bytes) * 1000;
        LogLimiter {
            rate: rate_bytes_per_s,
            burst_milli,
            tokens_milli: burst_milli,
            last_ms: None,
            total_cap,
            written: 0,
            dropped: 0,
            pending: 0,
        }
    }

    /// Offers `data` printed at `now_ms` (any monotonic clock); appends what is admitted to
    /// `out`, preceded by a marker when output was dropped before it.
    pub fn offer(&mut self, now_ms: u64, data: &[u8], out: &mut Vec<u8>) {
        self.refill(now_ms);
        let tokens = u64::try_from(self.tokens_milli / 1000).unwrap_or(u64::MAX);
        let room = tokens.min(self.total_cap - self.written);
        let mut admitted = usize::try_from(room).unwrap_or(usize::MAX).min(data.len());
        if admitted < data.len() {
            // Cut after a line end when there is one, so the log keeps whole lines.
            if let Some(newline) = data[..admitted].iter().rposition(|&b| b == b'\n') {
                admitted = newline + 1;
            }
        }
        if admitted > 0 {
            if self.pending > 0 {
                out.extend_from_slice(drop_marker(self.pending).as_bytes());
                self.pending = 0;
            }
            out.extend_from_slice(&data[..admitted]);
            self.written += admitted as u64;
            self.tokens_milli -= admitted as u128 * 1000;
        }
        let rest = (data.len() - admitted) as u64;
        self.dropped += rest;
        self.pending += rest;
    }

    /// Appends the marker for output dropped since the last one, at the end of the stream.
    pub fn finish(&mut self, out: &mut Vec<u8>) {
        if self.pending > 0 {
            out.extend_from_slice(drop_marker(self.pending).as_bytes());
            self.pending = 0;
        }
    }

    /// Bytes dropped so far, in all.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// Bytes admitted so far, in all (markers not counted).
    pub fn written(&self) -> u64 {
        self.written
    }

    fn refill(&mut self, now_ms: u64) {
        // A clock that goes back refills nothing rather than panicking or overflowing.
        let elapsed = self.last_ms.map_or(0, |last| now_ms.saturating_sub(last));
        if self.last_ms.is_none_or(|last| now_ms >= last) {
            self.last_ms = Some(now_ms);
        }
        let gained = u128::from(elapsed) * u128::from(self.rate);
        self.tokens_milli = (self.tokens_milli + gained).min(self.burst_milli);
    }
}
