// SPDX-License-Identifier: GPL-3.0-or-later
use std::net::SocketAddr;

use partagpu_core::fleet::NodeState;
use partagpu_core::protocol::{NodeIdentity, VerifiedNode};
use partagpu_core::{CpuInfo, GpuProbeStatus, Limits, LoadAverage, MemoryInfo, SharingState};

use super::*;

fn state(name: &str) -> NodeState {
    NodeState {
        name: name.into(),
        version: "0.1.0".into(),
        sharing: SharingState::Sharing,
        limits: Limits::default_for(1 << 30),
        cpu: CpuInfo {
            model: String::new(),
            cores: 2,
            usage_percent: 1.0,
        },
        memory: MemoryInfo {
            total_bytes: 1 << 30,
            available_bytes: 1 << 29,
        },
        load: LoadAverage::default(),
        gpus: Vec::new(),
        gpu_probe: GpuProbeStatus::Unavailable("no NVML".into()),
        jobs_running: 0,
        runtimes: Vec::new(),
    }
}

fn node(seed: u8) -> VerifiedNode {
    let identity = NodeIdentity::from_seed(&[seed; 32]);
    VerifiedNode {
        node_id: identity.node_id(),
        public_key: identity.public_key(),
    }
}

/// Two fleets, `low` with the smaller node id.
fn pair() -> (Fleet, VerifiedNode, Fleet, VerifiedNode) {
    let (a, b) = (node(1), node(2));
    let (low, high) = if a.node_id.to_hex() < b.node_id.to_hex() {
        (a, b)
    } else {
        (b, a)
    };
    let fleet = |n: &VerifiedNode| Fleet::new(n.node_id.to_hex(), 7655, state("pc"));
    (fleet(&low), low, fleet(&high), high)
}

fn addr(last: u8) -> SocketAddr {
    SocketAddr::from(([10, 98, 0, last], 40000))
}

#[test]
fn simultaneous_dials_keep_the_same_link_on_both_sides() {
    let (low_fleet, low, high_fleet, high) = pair();
    // Each side registers its outgoing link first, then the incoming one.
    let (_, mut low_out) = low_fleet
        .register(&high, Side::Client, addr(2), "b1", None)
        .unwrap();
    assert_eq!(
        low_fleet
            .register(&high, Side::Server, addr(2), "b1", Some(7655))
            .unwrap_err(),
        Refused::Duplicate,
        "the low side keeps the link it dialled"
    );
    let (_, mut high_out) = high_fleet
        .register(&low, Side::Client, addr(1), "a1", None)
        .unwrap();
    let (_, _high_in) = high_fleet
        .register(&low, Side::Server, addr(1), "a1", Some(7655))
        .unwrap();
    assert_eq!(
        high_out.try_recv(),
        Ok("duplicate session"),
        "the high side drops its own"
    );
    assert!(low_out.try_recv().is_err(), "still open");
}

#[test]
fn a_restarted_peer_replaces_its_dead_link() {
    let (fleet, _, _, peer) = pair();
    let (old, mut old_close) = fleet
        .register(&peer, Side::Server, addr(2), "boot-1", Some(7655))
        .unwrap();
    let (new, _) = fleet
        .register(&peer, Side::Server, addr(2), "boot-2", Some(7655))
        .unwrap();
    assert_eq!(old_close.try_recv(), Ok("replaced by a newer session"));
    // The old link's end must not turn the member offline.
    fleet.unregister(&old);
    assert!(fleet.members()[0].online);
    assert!(fleet.links_to(SocketAddr::from(([10, 98, 0, 2], 7655))));
    fleet.update(&old, state("stale"));
    assert_eq!(fleet.members()[0].state, None, "only the current link reports");
    fleet.update(&new, state("pc-02"));
    assert_eq!(fleet.members()[0].state.as_ref().unwrap().name, "pc-02");
    fleet.unregister(&new);
    let member = &fleet.members()[0];
    assert!(
        !member.online && member.state.is_some(),
        "offline, last state kept"
    );
}

#[test]
fn a_boot_id_that_comes_back_after_another_is_a_second_machine_with_one_key() {
    let (fleet, _, _, peer) = pair();
    let (_, mut first) = fleet
        .register(&peer, Side::Server, addr(2), "boot-a", Some(7655))
        .unwrap();
    // Another run with that key, from elsewhere: taken as a restart, at first.
    let (kept, mut second) = fleet
        .register(&peer, Side::Server, addr(3), "boot-b", Some(7655))
        .unwrap();
    assert_eq!(first.try_recv(), Ok("replaced by a newer session"));
    // The first one was alive all along: refused, and the link kept does not swap back.
    assert_eq!(
        fleet
            .register(&peer, Side::Client, addr(2), "boot-a", None)
            .unwrap_err(),
        Refused::SameIdentity
    );
    assert!(second.try_recv().is_err(), "the kept link stays open");
    // The kept one goes away (switched off, or given its own identity): the other is the
    // only one left and is taken back.
    fleet.unregister(&kept);
    let (back, _) = fleet
        .register(&peer, Side::Client, addr(2), "boot-a", None)
        .unwrap();
    // A real restart still replaces the link: its boot id is new.
    fleet.unregister(&back);
    fleet
        .register(&peer, Side::Server, addr(2), "boot-c", Some(7655))
        .unwrap();
    assert!(fleet.members()[0].online);
}

#[test]
fn itself_is_refused_and_clear_closes_every_link() {
    let (fleet, own, _, peer) = pair();
    let boot = fleet.boot().to_owned();
    assert_eq!(
        fleet
            .register(&own, Side::Client, addr(1), &boot, None)
            .unwrap_err(),
        Refused::Itself
    );
    // Our key from another run of the service: another machine, a copy of this one.
    assert_eq!(
        fleet
            .register(&own, Side::Server, addr(3), "x", Some(7655))
            .unwrap_err(),
        Refused::SameIdentity
    );
    let (_, mut close) = fleet.register(&peer, Side::Client, addr(2), "b", None).unwrap();
    let mut revisions = fleet.subscribe();
    revisions.borrow_and_update();
    fleet.clear();
    assert_eq!(close.try_recv(), Ok("this machine left the room"));
    assert!(fleet.members().is_empty());
    assert!(revisions.has_changed().unwrap());
}

#[test]
fn local_changes_are_published_once() {
    let (fleet, ..) = pair();
    let mut local = fleet.subscribe_local();
    local.borrow_and_update();
    fleet.publish_local(state("pc"));
    assert!(!local.has_changed().unwrap(), "same state, nothing to send");
    let mut paused = state("pc");
    paused.sharing = SharingState::Paused;
    fleet.publish_local(paused);
    assert!(local.has_changed().unwrap());
    assert_eq!(fleet.local().sharing, SharingState::Paused);
}

#[test]
fn a_member_is_watched_while_one_watcher_names_it() {
    let fleet = Arc::new(Fleet::new("00".into(), 7655, state("here")));
    let seen = fleet.subscribe_watched();
    let (first, second) = (fleet.watcher(), fleet.watcher());
    first.set(["aa".to_owned(), "bb".to_owned()]);
    second.set(["bb".to_owned()]);
    assert!(is_watched(&seen.borrow(), "aa") && is_watched(&seen.borrow(), "bb"));
    first.set(["cc".to_owned()]);
    assert!(!is_watched(&seen.borrow(), "aa"), "let go by its only watcher");
    drop(second);
    assert!(!is_watched(&seen.borrow(), "bb"));
    first.set(Vec::new());
    assert!(seen.borrow().is_empty(), "{:?}", *seen.borrow());
}

#[test]
fn setting_the_same_members_again_wakes_no_link() {
    let fleet = Arc::new(Fleet::new("00".into(), 7655, state("here")));
    let mut seen = fleet.subscribe_watched();
    let watcher = fleet.watcher();
    watcher.set(["aa".to_owned()]);
    assert!(seen.has_changed().unwrap());
    seen.borrow_and_update();
    watcher.set(["aa".to_owned()]);
    assert!(!seen.has_changed().unwrap(), "the coordinator sets it every tick");
}
