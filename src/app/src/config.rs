// SPDX-License-Identifier: GPL-3.0-or-later
//! Build-time constants. meson passes real values as environment variables at build time;
//! a plain `cargo build` gets the defaults, so cargo alone builds and runs the app.

use std::path::PathBuf;

/// The application id (desktop file, metainfo, icons).
pub const APP_ID: &str = partagpu_core::ids::APP_ID;
/// The gettext domain: `partagpu.mo`.
pub const GETTEXT_PACKAGE: &str = "partagpu";
/// This app's version.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Where the compiled translations are: `PARTAGPU_LOCALEDIR` at run time (tests, a build
/// tree), else `LOCALEDIR` given at build time, else the system's.
#[must_use]
pub fn locale_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("PARTAGPU_LOCALEDIR") {
        return PathBuf::from(dir);
    }
    PathBuf::from(option_env!("LOCALEDIR").unwrap_or("/usr/share/locale"))
}

/// Where the tray host looks for our icons first: `PARTAGPU_ICONDIR` at run time (a build
/// tree: `data/icons`), else `ICONDIR` given at build time, else nothing (the installed
/// hicolor theme has them).
#[must_use]
pub fn icon_dir() -> String {
    if let Ok(dir) = std::env::var("PARTAGPU_ICONDIR") {
        return dir;
    }
    option_env!("ICONDIR").unwrap_or_default().to_owned()
}
