// SPDX-License-Identifier: GPL-3.0-or-later
//! `partagpu`, the GNOME app of PartaGPU: what this machine lends, who is in the room,
//! what runs where. It talks to `partagpud` only through `partagpu_client`.
//!
//! ```text
//! AdwApplicationWindow (app.rs, the funnel of failures → toasts)
//! └── AdwToastOverlay
//!     ├── AdwHeaderBar + AdwViewSwitcherTitle
//!     ├── AdwViewStack
//!     │   ├── My sharing   pages/sharing.rs   (mode, sliders, gauges, jobs here)
//!     │   ├── Room         pages/room.rs      (create/join, code, members, other rooms)
//!     │   ├── My jobs      pages/jobs.rs      (list, log, cancel, artifacts)
//!     │   ├── Security     pages/security.rs  (journal, filter, explanations)
//!     │   └── Guide        pages/guide.rs
//!     └── AdwViewSwitcherBar (narrow windows)
//! daemon_link.rs: one task following the bus name and the service's signals
//! tray.rs: the StatusNotifierItem (pause / resume, open, quit), on the session bus
//! window_state.rs: the window's size between runs (GSettings)
//! ```

pub mod app;
pub mod app_error;
pub mod config;
pub mod daemon_link;
pub mod format;
pub mod i18n;
pub mod options;
pub mod pages;
pub mod snapshot;
pub mod tray;
pub mod widgets;
pub mod window_state;

use relm4::adw;
use relm4::adw::prelude::*;
use relm4::gtk::gio;

pub use options::{Options, OptionsError, USAGE};

/// What `run` could not do.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// A command line it does not understand.
    #[error(transparent)]
    Options(#[from] OptionsError),
}

/// Starts the app with the arguments after the program name; returns when it quits.
///
/// # Errors
/// [`RunError::Options`] for an unknown option.
pub fn run<I: IntoIterator<Item = String>>(args: I) -> Result<(), RunError> {
    init_logging();
    let options = Options::parse(args)?;
    if options.help {
        println!("{USAGE}");
        return Ok(());
    }
    if options.version {
        println!("partagpu {}", config::VERSION);
        return Ok(());
    }
    i18n::init();
    let application = adw::Application::new(Some(config::APP_ID), gio::ApplicationFlags::default());
    application.connect_startup(add_shortcuts);
    // GTK gets no arguments: ours are parsed above.
    // The root component shows the window itself, so `--background` can keep it hidden.
    relm4::RelmApp::from_app(application)
        .visible_on_activate(false)
        .with_args(Vec::new())
        .run::<app::App>(options);
    Ok(())
}

/// GNOME's usual keys: Ctrl+W closes the window (into the tray when there is one), Ctrl+Q
/// quits.
fn add_shortcuts(application: &adw::Application) {
    let quit = gio::ActionEntry::builder("quit")
        .activate(|application: &adw::Application, _, _| application.quit())
        .build();
    application.add_action_entries([quit]);
    application.set_accels_for_action("app.quit", &["<Control>q"]);
    application.set_accels_for_action("window.close", &["<Control>w"]);
}

/// `RUST_LOG` sets the levels; `G_MESSAGES_DEBUG=all` (GNOME's switch) turns on debug.
fn init_logging() {
    let default = match std::env::var("G_MESSAGES_DEBUG") {
        Ok(value) if value.contains("all") || value.contains(config::APP_ID) => "debug",
        _ => "info",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}
