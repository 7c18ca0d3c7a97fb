// SPDX-License-Identifier: GPL-3.0-or-later
//! `Sharing1`: the owner's policy. Every mutating method authorises its caller with polkit,
//! saves the change, and only then answers and signals it.

use std::collections::HashMap;
use std::sync::Arc;

use partagpu_core::ids::actions;
use partagpu_core::policy::validate_display_name;
use partagpu_core::{LimitsUpdate, PolicyError, SharingPolicy};
use zbus::message::Header;
use zbus::object_server::SignalEmitter;
use zbus::zvariant::OwnedValue;
use zbus::Connection;

use crate::auth::authorize;
use crate::error::BusError;
use crate::sharing::SharingStore;

/// The `Sharing1` object.
pub struct SharingIface {
    store: Arc<SharingStore>,
}

impl SharingIface {
    /// An object over `store`.
    #[must_use]
    pub fn new(store: Arc<SharingStore>) -> Self {
        Self { store }
    }

    /// Authorises, applies `change` off the async thread (it fsyncs), then signals what moved.
    async fn apply<F>(&self, call: Call<'_>, action: &str, change: F) -> Result<(), BusError>
    where
        F: FnOnce(&SharingPolicy) -> Result<SharingPolicy, PolicyError> + Send + 'static,
    {
        authorize(call.connection, call.header, action).await?;
        let store = Arc::clone(&self.store);
        let (before, after) = tokio::task::spawn_blocking(move || store.change(change))
            .await
            .map_err(|error| BusError::StorageFailed(format!("the change was interrupted: {error}")))??;
        tracing::info!(action, state = after.state().as_str(), "sharing policy changed");
        self.emit_changes(&before, &after, call.emitter).await?;
        Ok(())
    }

    /// Pauses or resumes for the service itself (the owner came back or left: no caller to
    /// authorise), and signals what moved. False when the change could not be saved.
    pub async fn set_paused_by_service(
        object: &zbus::object_server::InterfaceRef<SharingIface>,
        paused: bool,
    ) -> bool {
        let iface = object.get().await;
        let store = Arc::clone(&iface.store);
        let changed =
            tokio::task::spawn_blocking(move || store.change(|p| Ok(SharingPolicy { paused, ..p.clone() })))
                .await;
        match changed {
            Ok(Ok((before, after))) => {
                tracing::info!(
                    state = after.state().as_str(),
                    "sharing policy changed by the owner's presence"
                );
                if let Err(error) = iface.emit_changes(&before, &after, object.signal_emitter()).await {
                    tracing::debug!(%error, "cannot signal the sharing change");
                }
                true
            }
            Ok(Err(error)) => {
                tracing::warn!(%error, "cannot change the sharing policy");
                false
            }
            Err(error) => {
                tracing::warn!(%error, "the sharing change was interrupted");
                false
            }
        }
    }

    async fn emit_changes(
        &self,
        before: &SharingPolicy,
        after: &SharingPolicy,
        emitter: &SignalEmitter<'_>,
    ) -> zbus::Result<()> {
        if before.enabled != after.enabled {
            self.enabled_changed(emitter).await?;
        }
        if before.paused != after.paused {
            self.paused_changed(emitter).await?;
        }
        if before.state() != after.state() {
            self.state_changed(emitter).await?;
        }
        if before.limits.cpu_percent != after.limits.cpu_percent {
            self.cpu_limit_changed(emitter).await?;
        }
        if before.limits.ram_bytes != after.limits.ram_bytes {
            self.ram_limit_changed(emitter).await?;
        }
        if before.limits.gpu_percent != after.limits.gpu_percent {
            self.gpu_limit_changed(emitter).await?;
        }
        if before.display_name != after.display_name {
            self.display_name_changed(emitter).await?;
        }
        Ok(())
    }
}

/// What every handler passes on from zbus.
struct Call<'a> {
    connection: &'a Connection,
    header: &'a Header<'a>,
    emitter: &'a SignalEmitter<'a>,
}

/// Reads the `SetLimits` dictionary; unknown keys and wrong types are refused.
fn parse_limits(limits: &HashMap<String, OwnedValue>) -> Result<LimitsUpdate, BusError> {
    let invalid = |text: String| BusError::InvalidArgument(text);
    let mut update = LimitsUpdate::default();
    for (key, value) in limits {
        let wrong_type = |expected: &str| invalid(format!("limit '{key}' must be of type {expected}"));
        match key.as_str() {
            "cpu-percent" => {
                update.cpu_percent = Some(value.downcast_ref::<u32>().map_err(|_| wrong_type("u"))?)
            }
            "ram-bytes" => update.ram_bytes = Some(value.downcast_ref::<u64>().map_err(|_| wrong_type("t"))?),
            "gpu-percent" => {
                update.gpu_percent = Some(value.downcast_ref::<u32>().map_err(|_| wrong_type("u"))?)
            }
            other => {
                return Err(invalid(format!(
                    "unknown limit '{other}': use cpu-percent, ram-bytes or gpu-percent"
                )))
            }
        }
    }
    Ok(update)
}

#[zbus::interface(name = "org.partagpu.PartaGPU.Daemon.Sharing1")]
impl SharingIface {
    #[zbus(property)]
    fn enabled(&self) -> bool {
        self.store.policy().enabled
    }

    #[zbus(property)]
    fn paused(&self) -> bool {
        self.store.policy().paused
    }

    #[zbus(property)]
    fn state(&self) -> String {
        self.store.policy().state().as_str().to_owned()
    }

    #[zbus(property)]
    fn cpu_limit(&self) -> u32 {
        self.store.policy().limits.cpu_percent
    }

    #[zbus(property)]
    fn ram_limit(&self) -> u64 {
        self.store.policy().limits.ram_bytes
    }

    #[zbus(property)]
    fn gpu_limit(&self) -> u32 {
        self.store.policy().limits.gpu_percent
    }

    #[zbus(property)]
    fn display_name(&self) -> String {
        self.store.policy().display_name
    }

    async fn set_enabled(
        &self,
        enabled: bool,
        #[zbus(header)] header: Header<'_>,
        #[zbus(connection)] connection: &Connection,
        #[zbus(signal_emitter)] emitter: SignalEmitter<'_>,
    ) -> Result<(), BusError> {
        let call = Call {
            connection,
            header: &header,
            emitter: &emitter,
        };
        self.apply(call, actions::SET_SHARING, move |p| {
            Ok(SharingPolicy { enabled, ..p.clone() })
        })
        .await
    }

    async fn pause(
        &self,
        #[zbus(header)] header: Header<'_>,
        #[zbus(connection)] connection: &Connection,
        #[zbus(signal_emitter)] emitter: SignalEmitter<'_>,
    ) -> Result<(), BusError> {
        let call = Call {
            connection,
            header: &header,
            emitter: &emitter,
        };
        self.apply(call, actions::PAUSE, |p| {
            Ok(SharingPolicy {
                paused: true,
                ..p.clone()
            })
        })
        .await
    }

    async fn resume(
        &self,
        #[zbus(header)] header: Header<'_>,
        #[zbus(connection)] connection: &Connection,
        #[zbus(signal_emitter)] emitter: SignalEmitter<'_>,
    ) -> Result<(), BusError> {
        let call = Call {
            connection,
            header: &header,
            emitter: &emitter,
        };
        self.apply(call, actions::PAUSE, |p| {
            Ok(SharingPolicy {
                paused: false,
                ..p.clone()
            })
        })
        .await
    }

    async fn set_limits(
        &self,
        limits: HashMap<String, OwnedValue>,
        #[zbus(header)] header: Header<'_>,
        #[zbus(connection)] connection: &Connection,
        #[zbus(signal_emitter)] emitter: SignalEmitter<'_>,
    ) -> Result<(), BusError> {
        // Malformed requests are refused before polkit is bothered.
        let update = parse_limits(&limits)?;
        let ram_total = self.store.ram_total_bytes();
        let call = Call {
            connection,
            header: &header,
            emitter: &emitter,
        };
        self.apply(call, actions::SET_LIMITS, move |p| {
            Ok(SharingPolicy {
                limits: p.limits.updated(update, ram_total)?,
                ..p.clone()
            })
        })
        .await
    }

    async fn set_display_name(
        &self,
        name: String,
        #[zbus(header)] header: Header<'_>,
        #[zbus(connection)] connection: &Connection,
        #[zbus(signal_emitter)] emitter: SignalEmitter<'_>,
    ) -> Result<(), BusError> {
        let name = validate_display_name(&name)
            .map_err(|error| BusError::InvalidArgument(error.to_string()))?
            .to_owned();
        let call = Call {
            connection,
            header: &header,
            emitter: &emitter,
        };
        self.apply(call, actions::SET_NAME, move |p| {
            Ok(SharingPolicy {
                display_name: name,
                ..p.clone()
            })
        })
        .await
    }
}
