// SPDX-License-Identifier: GPL-3.0-or-later
//! The tray: a StatusNotifierItem (ksni, over the session bus) whose icon says sharing /
//! paused / off / busy, with a menu to pause or resume sharing, open the window, or quit.
//!
//! A desktop without a tray host (GNOME without the AppIndicator extension) is normal: the
//! tray says so once in the log and waits; ksni registers the item if a host appears later.
//! The tray never calls the service itself: it tells the root component, which asks the My
//! sharing page, so a refusal reaches the same toast as any other.

mod look;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use ksni::menu::{MenuItem, StandardItem};
use ksni::{OfflineReason, ToolTip, TrayMethods};

pub use look::{Toggle, TrayLook, TrayModel, ICON_BUSY, ICON_OFF, ICON_PAUSED, ICON_SHARING};

use crate::config;
use crate::i18n::i18n;

/// What the tray tells the root component.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrayEvent {
    /// "Open PartaGPU", or a click on the icon.
    Open,
    /// The toggle item.
    Toggle(Toggle),
    /// "Quit".
    Quit,
    /// A tray host shows the item (true) or none does (false).
    HostPresent(bool),
}

/// Where the tray's events go.
pub type TrayEvents = Arc<dyn Fn(TrayEvent) + Send + Sync>;

/// Set once the "no tray host" line was logged: it is said once per run, not per retry.
static NO_HOST_LOGGED: AtomicBool = AtomicBool::new(false);

/// The item ksni serves.
pub struct PartaTray {
    look: TrayLook,
    events: TrayEvents,
    /// Whether a host shows the item now.
    host_present: Arc<AtomicBool>,
}

/// A running tray, to update or shut down.
pub type TrayHandle = ksni::Handle<PartaTray>;

impl PartaTray {
    /// Replaces what the tray shows; `false` when nothing changed (no update to send).
    pub fn set_look(&mut self, look: TrayLook) -> bool {
        if self.look == look {
            return false;
        }
        self.look = look;
        true
    }
}

impl ksni::Tray for PartaTray {
    fn id(&self) -> String {
        config::APP_ID.to_owned()
    }

    fn title(&self) -> String {
        "PartaGPU".to_owned()
    }

    fn icon_name(&self) -> String {
        self.look.icon.to_owned()
    }

    fn icon_theme_path(&self) -> String {
        config::icon_dir()
    }

    fn tool_tip(&self) -> ToolTip {
        ToolTip {
            icon_name: self.look.icon.to_owned(),
            title: "PartaGPU".to_owned(),
            description: self.look.summary.clone(),
            icon_pixmap: Vec::new(),
        }
    }

    fn activate(&mut self, _x: i32, _y: i32) {
        (self.events)(TrayEvent::Open);
    }

    fn menu(&self) -> Vec<MenuItem<Self>> {
        let mut items = vec![StandardItem {
            label: self.look.summary.clone(),
            enabled: false,
            ..Default::default()
        }
        .into()];
        if let Some(toggle) = self.look.toggle {
            items.push(
                StandardItem {
                    label: toggle.label(),
                    icon_name: match toggle {
                        Toggle::Pause => "media-playback-pause-symbolic",
                        Toggle::Resume | Toggle::TurnOn => "media-playback-start-symbolic",
                    }
                    .to_owned(),
                    activate: Box::new(move |tray: &mut Self| (tray.events)(TrayEvent::Toggle(toggle))),
                    ..Default::default()
                }
                .into(),
            );
        }
        items.push(MenuItem::Separator);
        items.push(
            StandardItem {
                label: i18n("Open PartaGPU"),
                activate: Box::new(|tray: &mut Self| (tray.events)(TrayEvent::Open)),
                ..Default::default()
            }
            .into(),
        );
        items.push(
            StandardItem {
                label: i18n("Quit"),
                icon_name: "application-exit-symbolic".to_owned(),
                activate: Box::new(|tray: &mut Self| (tray.events)(TrayEvent::Quit)),
                ..Default::default()
            }
            .into(),
        );
        items
    }

    fn watcher_online(&self) {
        tracing::info!("a tray host appeared: the PartaGPU icon is shown");
        self.host_present.store(true, Ordering::Relaxed);
        (self.events)(TrayEvent::HostPresent(true));
    }

    fn watcher_offline(&self, reason: OfflineReason) -> bool {
        if !NO_HOST_LOGGED.swap(true, Ordering::Relaxed) {
            let why = match reason {
                OfflineReason::Error(error) => error.to_string(),
                _ => "it went away".to_owned(),
            };
            tracing::info!(
                %why,
                "no tray host (StatusNotifierWatcher) on the session bus: PartaGPU runs without its tray icon"
            );
        }
        self.host_present.store(false, Ordering::Relaxed);
        (self.events)(TrayEvent::HostPresent(false));
        // Keep waiting: a host that starts later (or the AppIndicator extension turned on)
        // gets the item then.
        true
    }
}

/// A started tray as a message: `Debug` without ksni's internals.
pub struct Started(pub Option<(TrayHandle, bool)>);

impl std::fmt::Debug for Started {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "Started(tray)"
        } else {
            "Started(none)"
        })
    }
}

/// The root component's side of the tray: the model, the running item, and what it was
/// last sent.
#[derive(Default)]
pub struct TrayLink {
    model: TrayModel,
    handle: Option<TrayHandle>,
    sent: Option<TrayLook>,
    host_present: bool,
}

impl TrayLink {
    /// What the look is computed from.
    pub fn model_mut(&mut self) -> &mut TrayModel {
        &mut self.model
    }

    /// The tray started (or could not): send it the current look.
    pub fn started(&mut self, started: Started) {
        if let Some((handle, present)) = started.0 {
            self.handle = Some(handle);
            self.host_present = present;
        }
        self.sent = None;
        self.refresh();
    }

    /// A host appeared or went away.
    pub fn set_host_present(&mut self, present: bool) {
        self.host_present = present;
    }

    /// Whether a tray host shows the item: closing the window then only hides it.
    #[must_use]
    pub fn host_present(&self) -> bool {
        self.handle.is_some() && self.host_present
    }

    /// Sends the look when it changed.
    pub fn refresh(&mut self) {
        let look = self.model.look();
        let Some(handle) = self.handle.clone() else {
            return;
        };
        if self.sent.as_ref() == Some(&look) {
            return;
        }
        self.sent = Some(look.clone());
        relm4::spawn(async move {
            handle.update(move |tray| tray.set_look(look)).await;
        });
    }
}

/// Starts the tray on the session bus, with whether a host shows it now. `None` when there
/// is no session bus at all (logged); the app then runs as a plain window. Must run inside
/// the tokio runtime (relm4's).
pub async fn spawn(look: TrayLook, events: TrayEvents) -> Option<(TrayHandle, bool)> {
    let host_present = Arc::new(AtomicBool::new(true));
    let tray = PartaTray {
        look,
        events,
        host_present: host_present.clone(),
    };
    // In a Flatpak the app may own no `org.kde.StatusNotifierItem-PID-N` name (its PID there is
    // a guess, and Flatpak allows no wildcard for it): it registers with its unique bus name,
    // which the StatusNotifierItem spec allows and every watcher accepts.
    let in_flatpak = std::path::Path::new("/.flatpak-info").exists();
    match tray
        .disable_dbus_name(in_flatpak)
        .assume_sni_available(true)
        .spawn()
        .await
    {
        Ok(handle) => Some((handle, host_present.load(Ordering::Relaxed))),
        Err(error) => {
            tracing::info!(%error, "no tray: the session bus cannot be used");
            None
        }
    }
}
