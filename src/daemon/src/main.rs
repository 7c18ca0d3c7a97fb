// SPDX-License-Identifier: GPL-3.0-or-later
//! `partagpud`: see the crate documentation of `partagpu_daemon`.

fn main() -> std::process::ExitCode {
    partagpu_daemon::main()
}
