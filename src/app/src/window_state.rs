// SPDX-License-Identifier: GPL-3.0-or-later
//! The window's size and maximized state, kept in GSettings between runs
//! (data/org.partagpu.PartaGPU.gschema.xml).
//!
//! GLib aborts the process when asked for a schema that is not installed, as when the app
//! runs from a build tree: the schema is looked up first, and without it the window simply
//! opens at its default size.

use relm4::adw;
use relm4::adw::prelude::*;
use relm4::gtk::{gio, glib};

use crate::config::APP_ID;

/// The size a window opens at when nothing is stored.
pub const DEFAULT_SIZE: (i32, i32) = (980, 860);

/// The app's settings, or `None` when the schema is not installed.
#[must_use]
pub fn settings() -> Option<gio::Settings> {
    let schema = gio::SettingsSchemaSource::default()?.lookup(APP_ID, true)?;
    Some(gio::Settings::new_full(
        &schema,
        None::<&gio::SettingsBackend>,
        None,
    ))
}

/// Opens `window` as it was last left and stores its state whenever it is closed or the app
/// quits (the tray's Quit leaves the window open, so closing alone would miss it).
pub fn restore_and_remember(window: &adw::ApplicationWindow, app: &adw::Application) {
    let Some(settings) = settings() else {
        tracing::debug!("the GSettings schema is not installed: the window's size is not kept");
        window.set_default_size(DEFAULT_SIZE.0, DEFAULT_SIZE.1);
        return;
    };
    window.set_default_size(settings.int("window-width"), settings.int("window-height"));
    window.set_maximized(settings.boolean("window-maximized"));

    window.connect_close_request(glib::clone!(
        #[strong]
        settings,
        move |window| {
            save(window, &settings);
            glib::Propagation::Proceed
        }
    ));
    let window = window.downgrade();
    app.connect_shutdown(move |_| {
        if let Some(window) = window.upgrade() {
            save(&window, &settings);
        }
    });
}

fn save(window: &adw::ApplicationWindow, settings: &gio::Settings) {
    // The default size follows the user's resizing but not maximizing, which is what the
    // next start should restore under the maximized flag.
    let (width, height) = window.default_size();
    let result = settings
        .set_int("window-width", width)
        .and_then(|()| settings.set_int("window-height", height))
        .and_then(|()| settings.set_boolean("window-maximized", window.is_maximized()));
    if let Err(error) = result {
        tracing::warn!(%error, "could not store the window's size");
    }
    // Written now: the process may be about to exit.
    gio::Settings::sync();
}
