// SPDX-License-Identifier: GPL-3.0-or-later
//! Command-line flags. Every path is a flag so several instances can share one host (the
//! virtual lab, tests).

use std::path::PathBuf;

use clap::Parser;
use partagpu_core::ids::DEFAULT_PEER_PORT;

use crate::config::DEFAULT_CONFIG_PATH;

/// PartaGPU system service: lends a chosen share of this machine's CPU, RAM and GPU to the
/// room, on the D-Bus system bus (DBUS_SYSTEM_BUS_ADDRESS is honoured).
#[derive(Debug, Clone, Parser)]
#[command(name = "partagpud", version)]
pub struct Args {
    /// Directory for persistent state (policy, journal, room secrets).
    #[arg(long, value_name = "DIR", default_value = "/var/lib/partagpu")]
    pub state_dir: PathBuf,

    /// Directory for runtime files (pid file).
    #[arg(long, value_name = "DIR", default_value = "/run/partagpu")]
    pub runtime_dir: PathBuf,

    /// Admin configuration file (TOML); a missing file means defaults.
    #[arg(long, value_name = "FILE", default_value = DEFAULT_CONFIG_PATH)]
    pub config: PathBuf,

    /// TCP port of the encrypted peer protocol (PGR/1).
    #[arg(long, value_name = "PORT", default_value_t = DEFAULT_PEER_PORT,
          value_parser = clap::value_parser!(u16).range(1..))]
    pub peer_port: u16,

    /// Address the peer port listens on.
    #[arg(long, value_name = "ADDR", default_value = "0.0.0.0")]
    pub listen_address: std::net::IpAddr,

    /// Do not announce or browse rooms on mDNS (joins then need --peer).
    #[arg(long)]
    pub no_discovery: bool,

    /// Announce and browse on this network interface only.
    #[arg(long, value_name = "IFACE")]
    pub discovery_interface: Option<String>,

    /// This machine's id (machine-id(5)): the state directory is tied to it, so that a disk
    /// image copied onto many machines gives each its own identity.
    #[arg(long, value_name = "FILE", default_value = crate::room::machine::MACHINE_ID_PATH)]
    pub machine_id_file: PathBuf,

    /// Report the GPUs listed in this JSON file instead of asking NVML. For tests and the
    /// virtual lab on machines without GPUs; never in production.
    #[arg(long, value_name = "FILE")]
    pub fake_gpus: Option<PathBuf>,
}
