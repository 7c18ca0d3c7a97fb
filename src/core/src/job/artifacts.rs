// SPDX-License-Identifier: GPL-3.0-or-later
//! Which files of a job come back to the submitter: glob patterns from the spec, checked
//! up front, and the names of collected files, checked again by whoever receives them.

use super::workspace::{normalise_path, shown, PathError};

#[cfg(test)]
mod tests;

/// Most bytes of artifacts one job sends back.
pub const MAX_ARTIFACT_TOTAL: u64 = 256 << 20;
/// Most artifact files one job sends back.
pub const MAX_ARTIFACT_FILES: usize = 1024;
/// Longest pattern, in bytes.
pub const MAX_PATTERN_BYTES: usize = 256;

/// Why an artifact pattern or name was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ArtifactError {
    /// The pattern is empty.
    #[error("an artifact pattern is empty: give a path such as 'out/*.pt'")]
    EmptyPattern,
    /// Longer than [`MAX_PATTERN_BYTES`].
    #[error(
        "the artifact pattern '{shown}' is {bytes} bytes long: at most {MAX_PATTERN_BYTES} are accepted"
    )]
    PatternTooLong {
        /// The start of the pattern.
        shown: String,
        /// Its length.
        bytes: usize,
    },
    /// Starts with '/'.
    #[error("the artifact pattern '{0}' is absolute: give a path relative to the job's directory")]
    AbsolutePattern(String),
    /// Has an empty, `.` or `..` component.
    #[error("the artifact pattern '{0}' has an empty, '.' or '..' component: artifacts come from inside the job's directory")]
    BadComponent(String),
    /// Has `**`.
    #[error(
        "the artifact pattern '{0}' uses '**': only '*' and '?' within one directory level are supported"
    )]
    DoubleStar(String),
    /// Has a control character.
    #[error("the artifact pattern '{0}' contains a control character: remove it")]
    ControlInPattern(String),
    /// An artifact name breaks a path rule.
    #[error("an artifact name was refused: {0}")]
    Name(#[from] PathError),
    /// An artifact name that is valid but not in its normal form.
    #[error(
        "the artifact name '{0}' is not in normal form: it must have no '.' component and no trailing '/'"
    )]
    NotNormal(String),
}

/// Checks a glob pattern from a job spec.
///
/// # Errors
/// [`ArtifactError`] for an empty, long, absolute pattern, one with an empty, `.` or `..`
/// component, a control character, or `**`.
pub fn validate_pattern(p: &str) -> Result<(), ArtifactError> {
    if p.is_empty() {
        return Err(ArtifactError::EmptyPattern);
    }
    if p.len() > MAX_PATTERN_BYTES {
        return Err(ArtifactError::PatternTooLong {
            shown: shown(p),
            bytes: p.len(),
        });
    }
    if p.chars().any(char::is_control) {
        return Err(ArtifactError::ControlInPattern(shown(p)));
    }
    if p.starts_with('/') {
        return Err(ArtifactError::AbsolutePattern(shown(p)));
    }
    if p.split('/')
        .any(|part| part.is_empty() || part == "." || part == "..")
    {
        return Err(ArtifactError::BadComponent(shown(p)));
    }
    if p.contains("**") {
        return Err(ArtifactError::DoubleStar(shown(p)));
    }
    Ok(())
}

/// Whether `path` (relative, '/'-separated) matches `pattern` component by component:
/// `*` is any run of characters and `?` one character, neither crossing a '/'.
pub fn matches(pattern: &str, path: &str) -> bool {
    let mut wanted = pattern.split('/');
    let mut given = path.split('/');
    loop {
        match (wanted.next(), given.next()) {
            (None, None) => return true,
            (Some(w), Some(g)) if glob(w, g) => {}
            _ => return false,
        }
    }
}

/// Glob of one component, by characters; linear backtracking on the last `*`.
fn glob(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ti));
            pi += 1;
        } else if let Some((sp, st)) = star {
            // Let the last '*' swallow one more character and retry.
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

/// Checks an artifact name received over the network: the rules of workspace paths, in
/// normal form (what a collector sends).
///
/// # Errors
/// [`ArtifactError::Name`] when a path rule is broken, [`ArtifactError::NotNormal`] for a
/// valid name with `.` components or a trailing '/'.
pub fn validate_artifact_name(path: &str) -> Result<(), ArtifactError> {
    let normal = normalise_path(path.as_bytes())?;
    if normal != path {
        return Err(ArtifactError::NotNormal(shown(path)));
    }
    Ok(())
}
