// SPDX-License-Identifier: GPL-3.0-or-later
//! Giving the machine back when its owner sits down (`[owner] auto_pause`): someone using a
//! local session of this machine pauses sharing (the jobs here freeze at once), and after
//! `resume_after_idle_s` with every local session idle, sharing resumes.
//!
//! Presence is read from logind on the system bus: each local user session's `IdleHint`,
//! which GNOME (gnome-session, from the Mutter idle monitor) and logind itself (for text
//! consoles) keep up to date. A system service cannot reach the user's session bus, and
//! logind is where the desktop already reports idleness for the whole machine.
//!
//! Only a pause made here is undone here: a pause by hand stays, and a resume by hand while
//! the owner is present is respected until the owner has been idle and comes back.

mod logind;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Deserialize;

use crate::sharing::SharingStore;

/// How often presence is looked at: the pause then lands well within a second.
pub const POLL: Duration = Duration::from_millis(400);
const DEFAULT_RESUME_AFTER_IDLE_S: u64 = 600;
/// Present in the state dir while sharing is paused by this module (so that a restart of
/// the service still resumes it).
const MARKER: &str = "owner-paused";

/// `[owner]` of partagpu.toml.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct OwnerConfig {
    /// Pause when someone uses a local session of this machine (default false).
    #[serde(default)]
    pub auto_pause: bool,
    /// Seconds every local session must stay idle before sharing resumes (default 600).
    pub resume_after_idle_s: Option<u64>,
}

impl OwnerConfig {
    /// The idle time that gives the machine back to the room.
    #[must_use]
    pub fn resume_after(&self) -> Duration {
        Duration::from_secs(self.resume_after_idle_s.unwrap_or(DEFAULT_RESUME_AFTER_IDLE_S))
    }
}

/// What to do after an observation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// The owner is here: pause sharing.
    Pause,
    /// The owner has been away long enough: resume it.
    Resume,
}

/// The decision, apart from the bus and the clock.
#[derive(Debug)]
pub struct Presence {
    resume_after: Duration,
    /// Sharing is paused because of the owner (and by nobody else since).
    auto_paused: bool,
    /// Resumed by hand while the owner was present: leave it so until they go idle.
    overridden: bool,
    idle_since: Option<Instant>,
}

impl Presence {
    /// `auto_paused`: whether a pause of ours was in force when the service last stopped.
    #[must_use]
    pub fn new(resume_after: Duration, auto_paused: bool) -> Self {
        Self {
            resume_after,
            auto_paused,
            overridden: false,
            idle_since: None,
        }
    }

    /// Whether sharing is paused by this module.
    #[must_use]
    pub fn auto_paused(&self) -> bool {
        self.auto_paused
    }

    /// One look: `present` (a local session is not idle) and `paused` (the policy now).
    pub fn observe(&mut self, present: bool, paused: bool, now: Instant) -> Option<Action> {
        if self.auto_paused && !paused {
            // Resumed by someone else: not ours any more.
            self.auto_paused = false;
            self.overridden = present;
            return None;
        }
        if present {
            self.idle_since = None;
            if !paused && !self.overridden {
                self.auto_paused = true;
                return Some(Action::Pause);
            }
            return None;
        }
        self.overridden = false;
        let since = *self.idle_since.get_or_insert(now);
        if self.auto_paused && now.duration_since(since) >= self.resume_after {
            self.auto_paused = false;
            return Some(Action::Resume);
        }
        None
    }
}

/// Follows presence until the service stops; `apply` changes the policy and signals it.
pub async fn run<F, Fut>(
    config: OwnerConfig,
    connection: zbus::Connection,
    store: Arc<SharingStore>,
    state_dir: PathBuf,
    apply: F,
) where
    F: Fn(bool) -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let marker = state_dir.join(MARKER);
    let mut presence = Presence::new(config.resume_after(), marker.exists());
    let mut unavailable_said = false;
    loop {
        match logind::someone_active(&connection).await {
            Ok(present) => {
                unavailable_said = false;
                let paused = store.policy().paused;
                let before = presence.auto_paused();
                match presence.observe(present, paused, Instant::now()) {
                    Some(Action::Pause) => {
                        tracing::info!("the owner is using this machine: pausing sharing");
                        if !apply(true).await {
                            presence = Presence::new(config.resume_after(), false);
                        }
                    }
                    Some(Action::Resume) => {
                        tracing::info!(
                            idle_s = config.resume_after().as_secs(),
                            "the owner is away: resuming sharing"
                        );
                        apply(false).await;
                    }
                    None => {}
                }
                if presence.auto_paused() != before {
                    let written = if presence.auto_paused() {
                        std::fs::write(&marker, b"")
                    } else {
                        std::fs::remove_file(&marker).or_else(|e| {
                            if e.kind() == std::io::ErrorKind::NotFound {
                                Ok(())
                            } else {
                                Err(e)
                            }
                        })
                    };
                    if let Err(error) = written {
                        tracing::warn!(%error, path = %marker.display(), "cannot record the owner's pause");
                    }
                }
            }
            Err(error) => {
                if !unavailable_said {
                    tracing::warn!(%error, "cannot read the sessions from logind: no auto-pause until it answers");
                    unavailable_said = true;
                }
            }
        }
        tokio::time::sleep(POLL).await;
    }
}

#[cfg(test)]
mod tests;
