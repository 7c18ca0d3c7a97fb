// SPDX-License-Identifier: GPL-3.0-or-later
//! Human sizes: `2G`, `512MiB`, `1.5 GiB`, `4000000000`, `8GB`.
//!
//! Single letters and `…iB` are binary (K = 1024), as in systemd's `MemoryMax=` and `free -h`;
//! `KB`/`MB`/`GB`/`TB` are decimal, as on disk labels. Plain numbers are bytes.

/// Why a size did not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SizeError {
    /// Not a number followed by a known unit.
    #[error("'{0}' is not a size: use a number with an optional unit, e.g. 2G, 512M or 1.5GiB")]
    Malformed(String),
    /// Does not fit in 64 bits.
    #[error("'{0}' is too large")]
    TooLarge(String),
}

const UNITS: &[(&str, u64)] = &[
    ("", 1),
    ("b", 1),
    ("k", 1 << 10),
    ("kib", 1 << 10),
    ("kb", 1_000),
    ("m", 1 << 20),
    ("mib", 1 << 20),
    ("mb", 1_000_000),
    ("g", 1 << 30),
    ("gib", 1 << 30),
    ("gb", 1_000_000_000),
    ("t", 1 << 40),
    ("tib", 1 << 40),
    ("tb", 1_000_000_000_000),
];

/// Parses a human size into bytes.
///
/// # Errors
/// [`SizeError`] for anything but a non-negative number with a known unit.
pub fn parse_size(text: &str) -> Result<u64, SizeError> {
    let trimmed = text.trim();
    let split = trimmed
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(trimmed.len());
    let (number, unit) = trimmed.split_at(split);
    let unit = unit.trim().to_ascii_lowercase();
    let malformed = || SizeError::Malformed(text.to_owned());
    let multiplier = UNITS
        .iter()
        .find(|(name, _)| *name == unit)
        .map(|(_, m)| *m)
        .ok_or_else(malformed)?;
    if number.is_empty() || number.starts_with('.') || number.ends_with('.') {
        return Err(malformed());
    }
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if fraction.contains('.') {
        return Err(malformed());
    }
    let too_large = || SizeError::TooLarge(text.to_owned());
    let whole: u64 = whole.parse().map_err(|_| too_large())?;
    let mut bytes = whole.checked_mul(multiplier).ok_or_else(too_large)?;
    if !fraction.is_empty() {
        // Integer arithmetic on at most 9 decimals keeps 1.5G exact.
        let digits = &fraction[..fraction.len().min(9)];
        let scale = 10u128.pow(u32::try_from(digits.len()).map_err(|_| malformed())?);
        let frac: u128 = digits.parse().map_err(|_| malformed())?;
        let extra = u64::try_from(frac * u128::from(multiplier) / scale).map_err(|_| too_large())?;
        bytes = bytes.checked_add(extra).ok_or_else(too_large)?;
    }
    Ok(bytes)
}

/// Formats bytes with one decimal in the largest binary unit that keeps the number ≥ 1.
#[must_use]
pub fn format_size(bytes: u64) -> String {
    const NAMES: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut unit = 0;
    let mut value = bytes as f64;
    while value >= 1024.0 && unit + 1 < NAMES.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", NAMES[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binary_decimal_and_plain_sizes() {
        assert_eq!(parse_size("2G"), Ok(2 << 30));
        assert_eq!(parse_size("2g"), Ok(2 << 30));
        assert_eq!(parse_size("512MiB"), Ok(512 << 20));
        assert_eq!(parse_size("1.5 GiB"), Ok(3 << 29));
        assert_eq!(parse_size("8GB"), Ok(8_000_000_000));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("0"), Ok(0));
        assert_eq!(parse_size(" 10k "), Ok(10_240));
    }

    #[test]
    fn malformed_sizes_are_refused() {
        for bad in ["", "G", "-1G", "2X", "1..5G", ".5G", "5.G", "1.2.3G", "2 G B"] {
            assert_eq!(parse_size(bad), Err(SizeError::Malformed(bad.into())), "{bad:?}");
        }
        assert_eq!(
            parse_size("99999999999T"),
            Err(SizeError::TooLarge("99999999999T".into()))
        );
    }

    #[test]
    fn formatting_picks_the_largest_unit() {
        assert_eq!(format_size(512), "512 B");
        assert_eq!(format_size(2 << 30), "2.0 GiB");
        assert_eq!(format_size(1536 << 20), "1.5 GiB");
        assert_eq!(format_size(u64::MAX), "16777216.0 TiB");
    }
}
