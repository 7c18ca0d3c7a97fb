// SPDX-License-Identifier: GPL-3.0-or-later
//! The served D-Bus interfaces are exactly `dbus/org.partagpu.PartaGPU.Daemon.xml`, and the
//! bus policy and polkit files name what the code uses.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use partagpu_core::ids::{self, actions};
use partagpu_core::{CpuInfo, GpuProbeStatus, LoadAverage, MemoryInfo, Resources};
use partagpu_daemon::config::Config;
use partagpu_daemon::fleet::local::node_state;
use partagpu_daemon::fleet::Fleet;
use partagpu_daemon::jobs::exec::Executor;
use partagpu_daemon::jobs::manager::JobManager;
use partagpu_daemon::journal::SecurityJournal;
use partagpu_daemon::membership::Membership;
use partagpu_daemon::peer::events::Reporter;
use partagpu_daemon::peer::{PeerContext, Timing};
use partagpu_daemon::room::RoomState;
use partagpu_daemon::service::{
    FleetIface, JobsIface, MachineIface, MachineState, RoomIface, SecurityIface, SharingIface,
};
use partagpu_daemon::sharing::SharingStore;
use zbus_xml::{ArgDirection, Node};

fn repo_file(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(relative)
}

fn resources() -> Resources {
    Resources {
        cpu: CpuInfo {
            model: "Test CPU".into(),
            cores: 4,
            usage_percent: 12.5,
        },
        memory: MemoryInfo {
            total_bytes: 8 << 30,
            available_bytes: 6 << 30,
        },
        load: LoadAverage {
            one: 0.5,
            five: 0.25,
            fifteen: 0.125,
        },
        gpus: Vec::new(),
        gpu_probe: GpuProbeStatus::Unavailable("no NVML in tests".into()),
        jobs: Default::default(),
    }
}

/// One line per member, sorted, so a diff names exactly what differs.
fn describe(node: &Node<'_>) -> Vec<String> {
    let mut lines = Vec::new();
    for iface in node.interfaces() {
        let name = iface.name().to_string();
        if !name.starts_with(ids::APP_ID) {
            continue;
        }
        for method in iface.methods() {
            let args: Vec<String> = method
                .args()
                .iter()
                .map(|a| {
                    let dir = if a.direction() == Some(ArgDirection::Out) {
                        "out"
                    } else {
                        "in"
                    };
                    format!("{dir} {} {}", a.name().unwrap_or("?"), a.ty().inner())
                })
                .collect();
            lines.push(format!("{name} method {}({})", method.name(), args.join(", ")));
        }
        for signal in iface.signals() {
            let args: Vec<String> = signal
                .args()
                .iter()
                .map(|a| format!("{} {}", a.name().unwrap_or("?"), a.ty().inner()))
                .collect();
            lines.push(format!("{name} signal {}({})", signal.name(), args.join(", ")));
        }
        for property in iface.properties() {
            let emits = property
                .annotations()
                .iter()
                .find(|a| a.name() == "org.freedesktop.DBus.Property.EmitsChangedSignal")
                .map_or("true", |a| a.value());
            lines.push(format!(
                "{name} property {} {} {:?} emits={emits}",
                property.name(),
                property.ty().inner(),
                property.access()
            ));
        }
    }
    lines.sort();
    lines
}

#[tokio::test]
async fn served_interfaces_match_the_contract_file() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(SharingStore::open(dir.path(), &Config::default(), 8 << 30, "pc").unwrap());
    let journal = SecurityJournal::open(dir.path(), 10).unwrap();
    let machine = MachineState::new("0.0.0".into(), 7655, resources());

    let journal = Arc::new(Mutex::new(journal));
    let room = Arc::new(RoomState::open(dir.path(), None).unwrap());
    let reporter = Arc::new(Reporter::new(Arc::clone(&journal)));
    let resources = resources();
    let state = node_state("0.0.0", &resources, &store.policy());
    let fleet = Arc::new(Fleet::new(room.info().node_id, 7655, state));
    let executor = Executor::disabled(dir.path().join("run"), "not in this test");
    let jobs = JobManager::open(executor, dir.path(), Arc::clone(&store), room.info().node_id).unwrap();
    let membership = Membership {
        peer: Arc::new(PeerContext::new(
            Arc::clone(&room),
            reporter,
            Arc::clone(&fleet),
            Timing::default(),
        )),
        room,
        discovery: None,
    };

    let (server_stream, client_stream) = tokio::net::UnixStream::pair().unwrap();
    let guid = zbus::Guid::generate();
    let server = zbus::connection::Builder::unix_stream(server_stream)
        .server(guid)
        .unwrap()
        .p2p()
        .serve_at(ids::OBJECT_PATH, MachineIface::new(Arc::new(machine)))
        .unwrap()
        .serve_at(ids::OBJECT_PATH, SharingIface::new(store))
        .unwrap()
        .serve_at(ids::OBJECT_PATH, SecurityIface::new(journal))
        .unwrap()
        .serve_at(
            ids::OBJECT_PATH,
            JobsIface::new(jobs, Arc::clone(&membership.peer)),
        )
        .unwrap()
        .serve_at(ids::OBJECT_PATH, RoomIface::new(Arc::new(membership)))
        .unwrap()
        .serve_at(ids::OBJECT_PATH, FleetIface::new(fleet, String::new()))
        .unwrap()
        .build();
    let client = zbus::connection::Builder::unix_stream(client_stream)
        .p2p()
        .build();
    let (server, client) = tokio::join!(server, client);
    let _server = server.unwrap();
    let client = client.unwrap();

    // A p2p connection ignores the destination, but the proxy wants one.
    let introspectable = zbus::fdo::IntrospectableProxy::builder(&client)
        .destination(ids::BUS_NAME)
        .unwrap()
        .path(ids::OBJECT_PATH)
        .unwrap()
        .build()
        .await
        .unwrap();
    let served = introspectable.introspect().await.unwrap();
    let served = Node::from_reader(served.as_bytes()).unwrap();
    let contract_text = std::fs::read_to_string(repo_file("dbus/org.partagpu.PartaGPU.Daemon.xml")).unwrap();
    let contract = Node::from_reader(contract_text.as_bytes()).unwrap();

    let served = describe(&served);
    let contract = describe(&contract);
    assert!(!contract.is_empty());
    let missing: Vec<_> = contract.iter().filter(|l| !served.contains(l)).collect();
    let extra: Vec<_> = served.iter().filter(|l| !contract.contains(l)).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "in the XML only: {missing:#?}\nserved only: {extra:#?}"
    );
}

#[test]
fn the_contract_file_names_the_interfaces_of_core_ids() {
    let text = std::fs::read_to_string(repo_file("dbus/org.partagpu.PartaGPU.Daemon.xml")).unwrap();
    let node = Node::from_reader(text.as_bytes()).unwrap();
    let mut names: Vec<String> = node.interfaces().iter().map(|i| i.name().to_string()).collect();
    names.sort();
    let mut expected = [
        ids::MACHINE_INTERFACE,
        ids::SECURITY_INTERFACE,
        ids::SHARING_INTERFACE,
        ids::ROOM_INTERFACE,
        ids::FLEET_INTERFACE,
        ids::JOBS_INTERFACE,
    ]
    .map(String::from);
    expected.sort();
    assert_eq!(names, expected);
}

#[test]
fn the_bus_policy_lets_everyone_call_our_interfaces_and_only_root_own_the_name() {
    let policy = std::fs::read_to_string(repo_file("dbus/org.partagpu.PartaGPU.Daemon.conf")).unwrap();
    // Every interface of the contract file, so a new one cannot be forgotten here.
    let contract = std::fs::read_to_string(repo_file("dbus/org.partagpu.PartaGPU.Daemon.xml")).unwrap();
    let node = Node::from_reader(contract.as_bytes()).unwrap();
    for iface in node.interfaces().iter().map(|i| i.name().to_string()) {
        assert!(
            policy.contains(&format!("send_interface=\"{iface}\"")),
            "{iface} not allowed"
        );
    }
    assert_eq!(policy.matches("allow own=").count(), 1);
    assert!(policy.contains(&format!(
        "<policy user=\"root\">\n    <allow own=\"{}\"/>",
        ids::BUS_NAME
    )));
}

#[test]
fn the_polkit_policy_declares_every_action_the_service_checks() {
    let policy = std::fs::read_to_string(repo_file("polkit/org.partagpu.PartaGPU.Daemon.policy")).unwrap();
    let declared: Vec<&str> = policy
        .split("<action id=\"")
        .skip(1)
        .filter_map(|rest| rest.split('"').next())
        .collect();
    let mut expected = actions::ALL.to_vec();
    expected.sort_unstable();
    let mut declared_sorted = declared.clone();
    declared_sorted.sort_unstable();
    assert_eq!(declared_sorted, expected);
}
