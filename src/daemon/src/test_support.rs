// SPDX-License-Identifier: GPL-3.0-or-later
//! Helpers shared by the crate's unit tests.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

/// Writes an executable script that a test then runs.
///
/// Writing it from this process would race with the other test threads: one of them may
/// fork while our write descriptor is open, and until its child execs, running the script
/// fails with ETXTBSY ("Text file busy"). A short-lived `sh` writes the file instead, so
/// the only descriptor ever open for writing belongs to a process nobody else forks from.
pub(crate) fn write_executable(path: &Path, body: &str) {
    let mut writer = Command::new("/bin/sh")
        .args(["-c", r#"cat > "$1" && chmod 755 "$1""#, "sh"])
        .arg(path)
        .stdin(Stdio::piped())
        .spawn()
        .expect("start sh to write a script");
    writer
        .stdin
        .take()
        .expect("sh stdin")
        .write_all(body.as_bytes())
        .expect("pipe the script to sh");
    let status = writer.wait().expect("wait for sh");
    assert!(status.success(), "writing {} failed: {status}", path.display());
}
