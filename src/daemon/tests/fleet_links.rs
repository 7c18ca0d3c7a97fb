// SPDX-License-Identifier: GPL-3.0-or-later
//! Member links over real TCP on 127.0.0.1: both sides list each other with their states,
//! an owner's change reaches the other side at once, and an ended link turns the member
//! offline. (Across machines with mDNS: tests/test_lab_fleet.py.)

mod support;

use std::sync::Arc;
use std::time::Duration;

use partagpu_core::SharingState;
use partagpu_daemon::fleet::link::{self, PeerHello};
use partagpu_daemon::fleet::Member;
use partagpu_daemon::peer::client::dial;
use partagpu_daemon::peer::session::Side;
use support::{node_state, room_with_code, Machine};

async fn until(what: &str, mut ready: impl FnMut() -> bool) {
    for _ in 0..100 {
        if ready() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("timed out waiting for {what}");
}

fn only(machine: &Machine) -> Option<Member> {
    let members = machine.context.fleet.members();
    assert!(members.len() <= 1, "{members:?}");
    members.into_iter().next()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn linked_members_see_each_other_and_each_change() {
    let (a, b) = (Machine::new(), Machine::new());
    let code = a.create_room();
    a.context.fleet.publish_local(node_state("pc-a"));
    b.context.fleet.publish_local(node_state("pc-b"));
    let addr = a.listen().await;
    let room = room_with_code(&a, code);
    b.room.install(room.clone()).unwrap();
    let dialled = dial(addr, &room, &b.context).await.unwrap();
    let hello = PeerHello {
        boot: dialled.hello.boot.clone(),
        port: dialled.hello.port,
    };
    assert_eq!(hello.boot.as_deref(), Some(a.context.fleet.boot()));
    let context = Arc::clone(&b.context);
    let running = tokio::spawn(async move {
        link::run(dialled.channel, &context, &dialled.node, Side::Client, hello).await
    });

    let named = |m: &Machine, name: &str| {
        only(m).is_some_and(|m| m.online && m.state.as_ref().is_some_and(|s| s.name == name))
    };
    until("both sides to list each other", || {
        named(&a, "pc-b") && named(&b, "pc-a")
    })
    .await;
    let seen_by_b = only(&b).unwrap();
    assert_eq!(seen_by_b.node_id, a.room.info().node_id);
    assert_eq!(seen_by_b.fingerprint, a.room.info().fingerprint);
    assert_eq!(seen_by_b.address, Some(addr), "dialled address");

    let mut paused = node_state("pc-a");
    paused.sharing = SharingState::Paused;
    paused.limits.cpu_percent = 10;
    a.context.fleet.publish_local(paused.clone());
    until("the pause to reach b", || {
        only(&b).unwrap().state == Some(paused.clone())
    })
    .await;

    // a leaves: its links close, b keeps a as an offline member.
    a.context.fleet.clear();
    until("a to turn offline on b", || !only(&b).unwrap().online).await;
    assert_eq!(running.await.unwrap(), None, "registered, then ended");
    assert!(only(&a).is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_link_from_the_same_run_is_not_kept() {
    let (a, b) = (Machine::new(), Machine::new());
    let code = a.create_room();
    let addr = a.listen().await;
    let room = room_with_code(&a, code);
    b.room.install(room.clone()).unwrap();
    let mut runs = Vec::new();
    for _ in 0..2 {
        let dialled = dial(addr, &room, &b.context).await.unwrap();
        let hello = PeerHello {
            boot: dialled.hello.boot.clone(),
            port: dialled.hello.port,
        };
        let context = Arc::clone(&b.context);
        runs.push(tokio::spawn(async move {
            link::run(dialled.channel, &context, &dialled.node, Side::Client, hello).await
        }));
        until("the link", || only(&a).is_some_and(|m| m.online)).await;
    }
    // Same boot, same direction: the newer link replaces the older one on both sides.
    let first = runs.remove(0);
    assert_eq!(
        tokio::time::timeout(Duration::from_secs(5), first)
            .await
            .unwrap()
            .unwrap(),
        None
    );
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        only(&a).unwrap().online && only(&b).unwrap().online,
        "the newer one lives"
    );
}
