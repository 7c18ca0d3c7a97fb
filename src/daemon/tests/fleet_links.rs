// SPDX-License-Identifier: GPL-3.0-or-later
//! Member links over real TCP on 127.0.0.1: both sides list each other with their states,
//! an owner's change reaches the other side at once, and an ended link turns the member
//! offline, and a member a training watches is given up after a short silence, only then.
//! (Across machines with mDNS: tests/test_lab_fleet.py.)

mod support;

use std::sync::Arc;
use std::time::Duration;

use partagpu_core::protocol::RecordType;
use partagpu_core::SharingState;
use partagpu_daemon::fleet::link::{self, PeerHello};
use partagpu_daemon::fleet::Member;
use partagpu_daemon::peer::client::dial;
use partagpu_daemon::peer::events::kinds;
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

/// Links `b` to `a` (b dials); `b`'s side is served only when `serve_b`, else b stays silent
/// and its channel is returned.
async fn link(a: &Machine, b: &Machine, serve_b: bool) -> Option<partagpu_daemon::peer::wire::Channel> {
    let code = a.create_room();
    let addr = a.listen().await;
    let room = room_with_code(a, code);
    b.room.install(room.clone()).unwrap();
    let dialled = dial(addr, &room, &b.context).await.unwrap();
    until("a to list b", || only(a).is_some_and(|m| m.online)).await;
    if !serve_b {
        return Some(dialled.channel);
    }
    let hello = PeerHello {
        boot: dialled.hello.boot.clone(),
        port: dialled.hello.port,
    };
    let context = Arc::clone(&b.context);
    tokio::spawn(
        async move { link::run(dialled.channel, &context, &dialled.node, Side::Client, hello).await },
    );
    None
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_member_is_given_up_soon_only_while_watched() {
    let (a, b) = (Machine::new(), Machine::new());
    let mut silent = link(&a, &b, false).await.unwrap();
    // Unwatched, its silence may last PGR/1's 45 s.
    tokio::time::sleep(a.context.timing.watched_dead_after * 2).await;
    assert!(only(&a).unwrap().online, "not watched: still a member");

    let watcher = a.context.fleet.watcher();
    watcher.set([b.room.info().node_id]);
    until("the silent member to turn offline", || !only(&a).unwrap().online).await;
    assert!(a.wait_for(kinds::DEADLINE).await, "{:?}", a.kinds());
    // It was asked (PING) before being given up, and told why (CLOSE).
    let mut got = Vec::new();
    while let Ok(record) = silent
        .reader
        .recv_before(tokio::time::Instant::now() + Duration::from_secs(2))
        .await
    {
        got.push(record.record_type);
        if record.record_type == RecordType::Close {
            break;
        }
    }
    assert!(got.contains(&RecordType::Ping), "{got:?}");
    assert_eq!(got.last(), Some(&RecordType::Close), "{got:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watched_member_that_answers_stays() {
    let (a, b) = (Machine::new(), Machine::new());
    link(&a, &b, true).await;
    // Quiet before the watch, longer than the watched silence: that silence does not count.
    tokio::time::sleep(a.context.timing.watched_dead_after * 2).await;
    let watcher = a.context.fleet.watcher();
    watcher.set([b.room.info().node_id]);
    tokio::time::sleep(a.context.timing.watched_dead_after * 3).await;
    assert!(only(&a).unwrap().online, "it answered every PING");
    assert!(!a.kinds().iter().any(|k| k == kinds::DEADLINE), "{:?}", a.kinds());
    drop(watcher);
}
