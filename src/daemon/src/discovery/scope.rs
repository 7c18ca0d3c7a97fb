// SPDX-License-Identifier: GPL-3.0-or-later
//! Where discovery looks and whom it dials (PGR/1 §9, §10): only LAN interfaces, only peers
//! inside LAN prefixes. The most reported bug of zero-config clusters is announcing on
//! `docker0` or a VPN and dialling addresses that lead nowhere; the admin can pin interfaces
//! or prefixes in `[discovery]` of the config file.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr};
use std::str::FromStr;

/// Name prefixes of interfaces that are not the lab's LAN: containers, bridges of virtual
/// machines, VPNs and tunnels. They are skipped unless the admin pins them.
const VIRTUAL_PREFIXES: &[&str] = &[
    "docker",
    "br-",
    "virbr",
    "veth",
    "vnet",
    "vboxnet",
    "vmnet",
    "lxcbr",
    "lxdbr",
    "podman",
    "cni",
    "flannel",
    "cali",
    "kube",
    "tun",
    "tap",
    "wg",
    "tailscale",
    "zt",
    "ppp",
    "nordlynx",
    "proton",
];

/// An IPv4 prefix such as `10.12.0.0/16`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Ipv4Prefix {
    network: Ipv4Addr,
    len: u8,
}

/// A prefix that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("\"{0}\" is not an IPv4 prefix like 10.12.0.0/16")]
pub struct PrefixError(String);

impl Ipv4Prefix {
    /// The prefix of `len` bits around `address`.
    #[must_use]
    pub fn new(address: Ipv4Addr, len: u8) -> Self {
        let len = len.min(32);
        let mask = u32::MAX.checked_shl(32 - u32::from(len)).unwrap_or(0);
        Self {
            network: Ipv4Addr::from(u32::from(address) & mask),
            len,
        }
    }

    /// Whether `address` is inside.
    #[must_use]
    pub fn contains(&self, address: Ipv4Addr) -> bool {
        Self::new(address, self.len) == *self
    }
}

impl FromStr for Ipv4Prefix {
    type Err = PrefixError;

    fn from_str(text: &str) -> Result<Self, PrefixError> {
        let error = || PrefixError(text.to_owned());
        let (address, len) = text.split_once('/').ok_or_else(error)?;
        let address: Ipv4Addr = address.parse().map_err(|_| error())?;
        let len: u8 = len.parse().map_err(|_| error())?;
        if len > 32 {
            return Err(error());
        }
        Ok(Self::new(address, len))
    }
}

impl fmt::Display for Ipv4Prefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.network, self.len)
    }
}

/// One address of one interface, as the kernel lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InterfaceAddress {
    /// Interface name, e.g. `eth0`.
    pub name: String,
    /// Its IPv4 address.
    pub address: Ipv4Addr,
    /// Prefix length of its subnet.
    pub prefix_len: u8,
    /// A point-to-point link (VPNs, PPP).
    pub point_to_point: bool,
}

/// The admin's choices: pinned interfaces and prefixes (both empty: automatic).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Scope {
    interfaces: Vec<String>,
    prefixes: Vec<Ipv4Prefix>,
}

impl Scope {
    /// A scope from the config file's `[discovery]`.
    #[must_use]
    pub fn new(interfaces: Vec<String>, prefixes: Vec<Ipv4Prefix>) -> Self {
        Self { interfaces, prefixes }
    }

    /// Whether discovery announces and listens on this interface address.
    #[must_use]
    pub fn uses(&self, interface: &InterfaceAddress) -> bool {
        if !self.interfaces.is_empty() {
            return self.interfaces.contains(&interface.name);
        }
        if !self.prefixes.is_empty() {
            return self.prefixes.iter().any(|p| p.contains(interface.address));
        }
        let address = interface.address;
        !(address.is_loopback()
            || address.is_link_local()
            || address.is_unspecified()
            || interface.point_to_point
            || VIRTUAL_PREFIXES.iter().any(|p| interface.name.starts_with(p)))
    }

    /// The prefixes peers must be in: the configured ones, or else the subnets of the
    /// interfaces in use.
    #[must_use]
    pub fn lan(&self, interfaces: &[InterfaceAddress]) -> Vec<Ipv4Prefix> {
        if !self.prefixes.is_empty() {
            return self.prefixes.clone();
        }
        let mut lan: Vec<Ipv4Prefix> = interfaces
            .iter()
            .filter(|i| self.uses(i))
            .map(|i| Ipv4Prefix::new(i.address, i.prefix_len))
            .collect();
        lan.sort();
        lan.dedup();
        lan
    }

    /// Whether an announced address may be dialled. Loopback and link-local addresses only
    /// when a configured prefix names them.
    #[must_use]
    pub fn may_dial(&self, address: IpAddr, lan: &[Ipv4Prefix]) -> bool {
        let IpAddr::V4(address) = address else {
            return false;
        };
        let special = address.is_loopback() || address.is_link_local() || address.is_unspecified();
        let inside = lan.iter().any(|p| p.contains(address));
        inside && (!special || self.prefixes.iter().any(|p| p.contains(address)))
    }
}

/// The IPv4 addresses of this machine's interfaces that are up.
#[must_use]
pub fn interface_addresses() -> Vec<InterfaceAddress> {
    let Ok(interfaces) = if_addrs::get_if_addrs() else {
        return Vec::new();
    };
    interfaces
        .into_iter()
        .filter(|i| i.is_oper_up() || matches!(i.oper_status, if_addrs::IfOperStatus::Unknown))
        .filter_map(|i| match i.addr {
            if_addrs::IfAddr::V4(v4) => Some(InterfaceAddress {
                name: i.name.clone(),
                address: v4.ip,
                prefix_len: v4.prefixlen,
                point_to_point: i.is_p2p,
            }),
            if_addrs::IfAddr::V6(_) => None,
        })
        .collect()
}

#[cfg(test)]
mod tests;
