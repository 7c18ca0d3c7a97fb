// SPDX-License-Identifier: GPL-3.0-or-later
//! `security-log` output.

use anyhow::Result;
use partagpu_core::journal::SecurityEvent;

pub fn print(events: &[SecurityEvent], json: bool) -> Result<()> {
    if json {
        println!("{}", serde_json::to_string_pretty(events)?);
        return Ok(());
    }
    if events.is_empty() {
        println!("The security journal is empty.");
        return Ok(());
    }
    for event in events {
        let from = if event.source.is_empty() {
            String::new()
        } else {
            format!(" from {}", event.source)
        };
        let times = if event.count > 1 {
            format!(" (×{})", event.count)
        } else {
            String::new()
        };
        println!(
            "#{seq} {time} {severity:<8} {kind}{from}{times}: {message}",
            seq = event.seq,
            time = format_time(event.time_unix_ms),
            severity = event.severity.as_str(),
            kind = event.kind,
            message = event.message,
        );
    }
    Ok(())
}

/// UTC `YYYY-MM-DD HH:MM:SS`, without a date-time dependency (civil-from-days).
fn format_time(unix_ms: u64) -> String {
    let seconds = unix_ms / 1000;
    let days = i64::try_from(seconds / 86_400).unwrap_or(0);
    let rest = seconds % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

#[cfg(test)]
mod tests {
    use super::format_time;

    #[test]
    fn times_are_utc_calendar_dates() {
        assert_eq!(format_time(0), "1970-01-01 00:00:00Z");
        assert_eq!(format_time(951_782_400_000), "2000-02-29 00:00:00Z");
        assert_eq!(format_time(1_796_215_447_123), "2026-12-02 12:44:07Z");
    }
}
