// SPDX-License-Identifier: GPL-3.0-or-later
use super::*;

fn interface(name: &str, address: [u8; 4], prefix_len: u8) -> InterfaceAddress {
    InterfaceAddress {
        name: name.into(),
        address: Ipv4Addr::from(address),
        prefix_len,
        point_to_point: false,
    }
}

fn machine() -> Vec<InterfaceAddress> {
    let mut vpn = interface("corp", [10, 8, 0, 2], 32);
    vpn.point_to_point = true;
    vec![
        interface("lo", [127, 0, 0, 1], 8),
        interface("enp3s0", [192, 168, 12, 40], 24),
        interface("docker0", [172, 17, 0, 1], 16),
        interface("wg0", [10, 200, 0, 1], 24),
        interface("virbr0", [192, 168, 122, 1], 24),
        vpn,
        interface("eth1", [169, 254, 3, 4], 16),
    ]
}

fn used(scope: &Scope) -> Vec<String> {
    machine()
        .into_iter()
        .filter(|i| scope.uses(i))
        .map(|i| i.name)
        .collect()
}

#[test]
fn automatic_scope_keeps_only_the_lan() {
    let scope = Scope::default();
    assert_eq!(used(&scope), ["enp3s0"]);
    let lan = scope.lan(&machine());
    assert_eq!(lan, ["192.168.12.0/24".parse().unwrap()]);
    let dial = |a: [u8; 4]| scope.may_dial(IpAddr::from(a), &lan);
    assert!(dial([192, 168, 12, 7]));
    assert!(!dial([172, 17, 0, 5]), "docker's subnet");
    assert!(!dial([192, 168, 13, 7]), "another subnet");
    assert!(!dial([127, 0, 0, 1]));
    assert!(!scope.may_dial("fe80::1".parse().unwrap(), &lan));
}

#[test]
fn pinned_interfaces_and_prefixes_win() {
    let pinned = Scope::new(vec!["docker0".into()], Vec::new());
    assert_eq!(used(&pinned), ["docker0"]);
    assert_eq!(pinned.lan(&machine()), ["172.17.0.0/16".parse().unwrap()]);

    let routed: Ipv4Prefix = "10.0.0.0/8".parse().unwrap();
    let by_prefix = Scope::new(Vec::new(), vec![routed]);
    assert_eq!(used(&by_prefix), ["wg0", "corp"]);
    let lan = by_prefix.lan(&machine());
    assert_eq!(lan, [routed], "the admin's prefixes, not the subnets");
    assert!(by_prefix.may_dial(IpAddr::from([10, 99, 1, 1]), &lan));
    assert!(!by_prefix.may_dial(IpAddr::from([192, 168, 12, 7]), &lan));

    let loopback = Scope::new(vec!["lo".into()], vec!["127.0.0.0/8".parse().unwrap()]);
    let lan = loopback.lan(&machine());
    assert!(
        loopback.may_dial(IpAddr::from([127, 0, 0, 2]), &lan),
        "named by the admin"
    );
}

#[test]
fn prefixes_parse_and_normalise() {
    let prefix: Ipv4Prefix = "10.98.0.17/24".parse().unwrap();
    assert_eq!(prefix.to_string(), "10.98.0.0/24");
    assert!(prefix.contains(Ipv4Addr::new(10, 98, 0, 200)));
    assert!(!prefix.contains(Ipv4Addr::new(10, 98, 1, 1)));
    assert!("0.0.0.0/0"
        .parse::<Ipv4Prefix>()
        .unwrap()
        .contains(Ipv4Addr::new(1, 2, 3, 4)));
    for bad in ["10.0.0.0", "10.0.0.0/33", "lab/24", "10.0.0.0/-1", ""] {
        assert_eq!(bad.parse::<Ipv4Prefix>(), Err(PrefixError(bad.into())), "{bad}");
    }
}
