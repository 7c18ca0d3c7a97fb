// SPDX-License-Identifier: GPL-3.0-or-later
//! The app's only view of `partagpud`: one task that follows the service's bus name and its
//! signals, and sends typed snapshots to the root component.
//!
//! State comes from signals, never from a timer: `PropertiesChanged` of Machine1/Sharing1
//! (re-read as a [`MachineStatus`]), Room1 and Fleet1, `Jobs1.JobChanged` and
//! `Security1.EventRecorded`. When the service goes away or comes back (restart,
//! `systemctl start`), `NameOwnerChanged` says so and everything is read again.

use std::fmt;
use std::time::Duration;

use futures_util::StreamExt;
use partagpu_client::{Client, ClientError, FleetView, RoomInfo, Security1Proxy};
use partagpu_core::ids::{
    BUS_NAME, FLEET_INTERFACE, MACHINE_INTERFACE, OBJECT_PATH, ROOM_INTERFACE, SHARING_INTERFACE,
};
use partagpu_core::job::record::JobRecord;
use partagpu_core::journal::SecurityEvent;
use partagpu_core::status::MachineStatus;
use relm4::Sender;

/// How many of the newest journal entries the Security page keeps.
pub const JOURNAL_WINDOW: u64 = 500;
/// How long to wait before trying the system bus again when there is none.
const BUS_RETRY: Duration = Duration::from_secs(5);

/// A connected client; `Debug` for relm4 messages without printing connection internals.
#[derive(Clone)]
pub struct Connected(pub Client);

impl fmt::Debug for Connected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Connected(..)")
    }
}

/// Why the service cannot be used now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unavailable {
    /// No system bus (the reason, for the log and the details line).
    NoBus(String),
    /// The bus is there, nobody owns the service's name.
    NotRunning,
}

/// What the link tells the root component.
#[derive(Debug)]
pub enum LinkEvent {
    /// The service is there (again); every snapshot follows.
    Connected(Connected),
    /// The service cannot be used.
    Unavailable(Unavailable),
    /// This machine: what it has, lends and does.
    Status(Box<MachineStatus>),
    /// The room's public facts.
    Room(RoomInfo),
    /// The machines of the room.
    Fleet(Box<FleetView>),
    /// Every job known here, newest first.
    Jobs(Vec<JobRecord>),
    /// The newest journal entries, oldest first.
    Journal(Vec<SecurityEvent>),
}

/// Which snapshot a signal asks to read again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Area {
    Status,
    Room,
    Fleet,
    Jobs,
    Journal,
}

fn area_of_interface(interface: &str) -> Option<Area> {
    match interface {
        MACHINE_INTERFACE | SHARING_INTERFACE => Some(Area::Status),
        ROOM_INTERFACE => Some(Area::Room),
        FLEET_INTERFACE => Some(Area::Fleet),
        _ => None,
    }
}

/// Runs until the app quits: connects, follows, reconnects.
pub async fn follow(out: Sender<LinkEvent>) {
    loop {
        let connection = match zbus::Connection::system().await {
            Ok(connection) => connection,
            Err(error) => {
                tracing::warn!(%error, "no system bus");
                out.emit(LinkEvent::Unavailable(Unavailable::NoBus(error.to_string())));
                tokio::time::sleep(BUS_RETRY).await;
                continue;
            }
        };
        if let Err(error) = follow_bus(&connection, &out).await {
            tracing::warn!(%error, "lost the system bus");
            out.emit(LinkEvent::Unavailable(Unavailable::NoBus(error.to_string())));
            tokio::time::sleep(BUS_RETRY).await;
        }
    }
}

/// Follows the service on one bus connection; returns only on a bus failure.
async fn follow_bus(connection: &zbus::Connection, out: &Sender<LinkEvent>) -> zbus::Result<()> {
    let bus = zbus::fdo::DBusProxy::new(connection).await?;
    let mut owners = bus.receive_name_owner_changed_with_args(&[(0, BUS_NAME)]).await?;
    let name = zbus::names::BusName::try_from(BUS_NAME)?;
    let mut running = bus.name_has_owner(name).await?;
    loop {
        if running {
            tracing::info!("partagpud is on the bus");
            // Returns when the owner changes (gone, or replaced by a restart).
            running = follow_service(connection, out, &mut owners).await?;
        } else {
            out.emit(LinkEvent::Unavailable(Unavailable::NotRunning));
            let Some(change) = owners.next().await else {
                return Err(zbus::Error::Failure("the bus closed".into()));
            };
            running = change.args()?.new_owner().is_some();
        }
    }
}

/// Reads everything, then re-reads what each signal names, until the service's owner
/// changes; returns whether a new owner is there.
async fn follow_service(
    connection: &zbus::Connection,
    out: &Sender<LinkEvent>,
    owners: &mut zbus::fdo::NameOwnerChangedStream,
) -> zbus::Result<bool> {
    let client = Client::with_connection(connection.clone())
        .await
        .map_err(|e| zbus::Error::Failure(e.to_string()))?;
    let properties = zbus::fdo::PropertiesProxy::builder(connection)
        .destination(BUS_NAME)?
        .path(OBJECT_PATH)?
        .build()
        .await?;
    let security = Security1Proxy::builder(connection)
        .cache_properties(zbus::proxy::CacheProperties::No)
        .build()
        .await?;
    // Subscribed before the first read, so no change falls between the read and the stream.
    let mut changed = properties.receive_properties_changed().await?;
    let mut jobs_changed = client.jobs().proxy().receive_job_changed().await?;
    let mut recorded = security.receive_event_recorded().await?;
    out.emit(LinkEvent::Connected(Connected(client.clone())));
    for area in [Area::Status, Area::Room, Area::Fleet, Area::Jobs, Area::Journal] {
        refresh(&client, &security, area, out).await;
    }
    loop {
        let area = tokio::select! {
            change = owners.next() => {
                let Some(change) = change else { return Ok(false) };
                return Ok(change.args()?.new_owner().is_some());
            }
            Some(signal) = changed.next() => {
                match signal.args() {
                    Ok(args) => area_of_interface(args.interface_name().as_str()),
                    Err(_) => None,
                }
            }
            Some(_) = jobs_changed.next() => Some(Area::Jobs),
            Some(_) = recorded.next() => Some(Area::Journal),
        };
        if let Some(area) = area {
            refresh(&client, &security, area, out).await;
        }
    }
}

/// Reads one snapshot and sends it. A failure is logged only: the service going away is
/// seen through its bus name, and the next signal reads again.
async fn refresh(client: &Client, security: &Security1Proxy<'static>, area: Area, out: &Sender<LinkEvent>) {
    let event = match area {
        Area::Status => client
            .machine_status()
            .await
            .map(|s| LinkEvent::Status(Box::new(s))),
        Area::Room => client.room().await.map(LinkEvent::Room),
        Area::Fleet => client.fleet().await.map(|f| LinkEvent::Fleet(Box::new(f))),
        Area::Jobs => read_jobs(client).await.map(LinkEvent::Jobs),
        Area::Journal => read_journal(client, security).await.map(LinkEvent::Journal),
    };
    match event {
        Ok(event) => out.emit(event),
        Err(error) => tracing::warn!(?area, %error, "cannot read the service's state"),
    }
}

async fn read_jobs(client: &Client) -> Result<Vec<JobRecord>, ClientError> {
    let json = client.jobs().list_json().await?;
    serde_json::from_str(&json).map_err(|e| ClientError::Protocol(e.to_string()))
}

async fn read_journal(
    client: &Client,
    security: &Security1Proxy<'static>,
) -> Result<Vec<SecurityEvent>, ClientError> {
    let last = security.last_event().await?;
    client
        .security_events(last.saturating_sub(JOURNAL_WINDOW), 0)
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_interface_refreshes_its_snapshot() {
        assert_eq!(area_of_interface(MACHINE_INTERFACE), Some(Area::Status));
        assert_eq!(area_of_interface(SHARING_INTERFACE), Some(Area::Status));
        assert_eq!(area_of_interface(ROOM_INTERFACE), Some(Area::Room));
        assert_eq!(area_of_interface(FLEET_INTERFACE), Some(Area::Fleet));
        assert_eq!(area_of_interface("org.example.Other"), None);
    }
}
