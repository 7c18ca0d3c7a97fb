// SPDX-License-Identifier: GPL-3.0-or-later
//! Tests of the generated nft text; `tests/netfilter_real.rs` loads it into a real kernel.

use super::*;

fn peer(a: [u8; 4], first: u16, last: u16) -> PeerAccess {
    PeerAccess {
        address: Ipv4Addr::from(a),
        first_port: first,
        last_port: last,
    }
}

#[test]
fn table_names_are_checked() {
    assert_eq!(table_name("ab12-cd").unwrap(), "partagpu_ab12_cd");
    for bad in ["", "AB", "a b", "a\"b", "a;b", &"a".repeat(65), "g0"] {
        assert!(table_name(bad).is_err(), "{bad:?}");
    }
    assert!(table_name(&"f".repeat(64)).is_ok());
}

#[test]
fn script_allows_only_the_job_peers() {
    let peers = [
        peer([10, 0, 0, 3], 29500, 29510),
        peer([10, 0, 0, 2], 29500, 29510),
    ];
    let s = rules("partagpu_ab", "partagpu-lab-m2/abc-0", &peers).unwrap();
    assert!(s.starts_with("# "));
    assert!(s.contains("add table inet partagpu_ab\ndelete table inet partagpu_ab\ntable inet partagpu_ab {"));
    assert!(s.contains("socket cgroupv2 level 2 \"partagpu-lab-m2/abc-0\" jump job_egress"));
    assert!(s.contains("elements = { 10.0.0.2 . 29500-29510, 10.0.0.3 . 29500-29510 }"));
    assert!(s.contains("elements = { 10.0.0.2, 10.0.0.3 }"));
    assert!(s.contains("elements = { 29500-29510 }"));
    assert!(s.contains("ct state established,related oif \"lo\" accept"));
    assert!(
        s.contains("ct state established,related ip daddr @peer_addrs accept"),
        "no replies to strangers"
    );
    assert!(s.contains("oif \"lo\" tcp dport @job_ports accept"));
    assert!(s.contains("meta nfproto ipv6 reject"));
    assert!(s.contains("meta l4proto tcp reject with tcp reset\n\t\treject with icmpx type admin-prohibited"));
    assert!(s.contains(
        "iif != \"lo\" socket cgroupv2 level 2 \"partagpu-lab-m2/abc-0\" ip saddr != @peer_addrs drop"
    ));
    // The established rule comes first, the catch-all reject last.
    let pos = |t: &str| s.find(t).unwrap();
    assert!(pos("ct state") < pos("ip daddr . tcp dport @peers accept"));
    assert!(pos("ip daddr . tcp dport @peers accept") < pos("meta l4proto tcp reject"));
}

#[test]
fn overlapping_ranges_are_merged() {
    let peers = [
        peer([10, 0, 0, 2], 100, 200),
        peer([10, 0, 0, 2], 150, 300),
        peer([10, 0, 0, 5], 301, 301),
    ];
    let s = rules("partagpu_ab", "a", &peers).unwrap();
    assert!(
        s.contains("elements = { 10.0.0.2 . 100-300, 10.0.0.5 . 301 }"),
        "{s}"
    );
    assert!(s.contains("elements = { 100-301 }"), "{s}");
    assert!(s.contains("level 1 \"a\""));
}

#[test]
fn no_peers_means_empty_sets() {
    let s = rules("partagpu_ab", "x/y/z", &[]).unwrap();
    assert!(!s.contains("elements"));
    assert!(s.contains("level 3"));
}

#[test]
fn hostile_inputs_are_refused() {
    for path in ["", "/abs", "a//b", "a/../b", "a/.", "a\"b", "a b", "a\nb", "a/b;"] {
        assert!(
            matches!(
                rules("partagpu_ab", path, &[]),
                Err(NetfilterError::BadCgroupPath(_))
            ),
            "{path:?}"
        );
    }
    for table in ["partagpu_", "filter", "partagpu_x", "partagpu_ab;flush ruleset"] {
        assert!(
            matches!(rules(table, "a", &[]), Err(NetfilterError::BadTableName(_))),
            "{table:?}"
        );
    }
    for (f, l) in [(0, 10), (20, 10)] {
        let e = rules("partagpu_ab", "a", &[peer([1, 2, 3, 4], f, l)]).unwrap_err();
        assert!(matches!(e, NetfilterError::BadPortRange { .. }));
        assert!(e.to_string().ends_with('.'));
    }
}

#[test]
fn install_needs_the_cgroup() {
    let dir = tempfile::tempdir().unwrap();
    let e = Nft { netns: None }
        .install("partagpu_ab", "missing/job", &[], dir.path())
        .unwrap_err();
    assert!(matches!(e, NetfilterError::MissingCgroup(_)), "{e}");
}
