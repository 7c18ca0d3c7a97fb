// SPDX-License-Identifier: GPL-3.0-or-later
//! `partagpud`: see the crate documentation of `partagpu_daemon`.

use partagpu_daemon::jobs::launch::{run_launcher, LAUNCH_FLAG};

fn main() -> std::process::ExitCode {
    // The launcher must run before anything else (no runtime, no logging): see `jobs::launch`.
    if std::env::args_os().nth(1).as_deref() == Some(std::ffi::OsStr::new(LAUNCH_FLAG)) {
        return run_launcher(&std::env::args_os().skip(2).collect::<Vec<_>>());
    }
    partagpu_daemon::main()
}
