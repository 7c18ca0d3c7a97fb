// SPDX-License-Identifier: GPL-3.0-or-later
//! Command-line grammar.

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};
use partagpu_core::job::spec::PeerAccess;
use partagpu_core::size::parse_size;

/// Control PartaGPU on this machine: what it lends to the room, pause, status.
#[derive(Debug, Parser)]
#[command(name = "partagpuctl", version, propagate_version = true)]
pub struct Args {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Show what this machine has, what it lends and whether it lends now.
    Status {
        /// Print one JSON document instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Show or change what this machine lends.
    Limits {
        #[command(subcommand)]
        command: LimitsCommand,
    },
    /// Take the machine back: freeze running work, start nothing new.
    Pause,
    /// Lend again after a pause.
    Resume,
    /// Turn sharing on or off (off refuses new work).
    Sharing {
        /// on or off
        state: OnOff,
    },
    /// Change the name the room sees for this machine.
    Rename {
        /// New name, 1 to 64 characters.
        name: String,
    },
    /// Create, join, show or leave the room this machine is in.
    Room {
        #[command(subcommand)]
        command: RoomCommand,
    },
    /// List the machines of the room: state, load, what they lend, online or not.
    Peers {
        /// Print one JSON document instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Show the security journal (wrong room codes, bans, key changes).
    SecurityLog {
        /// Print one JSON document instead of text.
        #[arg(long)]
        json: bool,
        /// Only events after this sequence number.
        #[arg(long, value_name = "SEQ", default_value_t = 0)]
        after: u64,
        /// At most this many events (0 = all).
        #[arg(long, value_name = "N", default_value_t = 0)]
        limit: u32,
    },
    /// Run a command here or on a member of the room, show its output live, fetch its artifacts.
    Run(RunArgs),
    /// List the jobs run here and those submitted from here.
    Jobs {
        /// Print the service's JSON array of job records unchanged.
        #[arg(long)]
        json: bool,
    },
    /// Show, follow, cancel one job, or fetch its artifacts again.
    Job {
        #[command(subcommand)]
        command: JobCommand,
    },
}

/// `partagpuctl run`.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// Where to run: a member's name or node id (default: this machine).
    #[arg(long, value_name = "NAME|ID", conflicts_with = "nodes")]
    pub node: Option<String>,
    /// Train across machines of the room instead: CMD is a PyTorch script started with
    /// torchrun on each; "all", a number, or names separated by commas.
    #[arg(long, value_name = "all|N|NAMES")]
    pub nodes: Option<String>,
    /// Directory sent as the job's working directory (default: an empty one).
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// Files to bring back, relative to the job's directory, e.g. 'out/*.pt' (repeatable).
    #[arg(long = "artifact", value_name = "PATTERN")]
    pub artifacts: Vec<String>,
    /// Runtime to run in (default: the machine's default).
    #[arg(long, value_name = "NAME")]
    pub runtime: Option<String>,
    /// An environment variable for the command (repeatable).
    #[arg(long = "env", value_name = "NAME=VALUE", value_parser = parse_env)]
    pub env: Vec<(String, String)>,
    /// CPU time asked for, percent of the machine.
    #[arg(long, value_name = "PCT", value_parser = parse_percent)]
    pub cpu: Option<u32>,
    /// Memory asked for, e.g. 2G or 512M.
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub ram: Option<u64>,
    /// GPUs asked for.
    #[arg(long, value_name = "N")]
    pub gpus: Option<u32>,
    /// Longest run: seconds, or e.g. 90s, 30m, 2h, 1h30m.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub time_limit: Option<u64>,
    /// Let the job reach this machine and ports, e.g. 10.0.0.5:29500-29510 (repeatable).
    /// Without it the job has no network at all.
    #[arg(long = "allow-peer", value_name = "ADDR:PORT[-PORT]", value_parser = parse_peer)]
    pub allow_peers: Vec<PeerAccess>,
    /// Where the artifacts are saved.
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub output: PathBuf,
    /// Print the job's handle and return at once.
    #[arg(long)]
    pub detach: bool,
    /// The command and its arguments, after `--`.
    #[arg(last = true, required = true, value_name = "CMD")]
    pub command: Vec<String>,
}

/// `partagpuctl job …`. JOB is a handle or a unique prefix of the job id.
#[derive(Debug, Subcommand)]
pub enum JobCommand {
    /// Show one job: state, where, resources, artifacts.
    Show {
        /// A handle or a unique prefix of the job id.
        job: String,
        /// Print the service's JSON record unchanged.
        #[arg(long)]
        json: bool,
    },
    /// Print a job's output.
    Logs {
        /// A handle or a unique prefix of the job id.
        job: String,
        /// Keep printing until the job ends.
        #[arg(long)]
        follow: bool,
        /// Start at this byte of the output.
        #[arg(long, value_name = "OFFSET", default_value_t = 0)]
        from: u64,
    },
    /// Stop a job.
    Cancel {
        /// A handle or a unique prefix of the job id.
        job: String,
    },
    /// Fetch a job's artifacts (again).
    Fetch {
        /// A handle or a unique prefix of the job id.
        job: String,
        /// Where the artifacts are saved.
        #[arg(long, value_name = "DIR", default_value = ".")]
        output: PathBuf,
    },
}

#[derive(Debug, Subcommand)]
pub enum RoomCommand {
    /// Create a room and print its four-word code (shown once).
    New {
        /// A name other machines see before joining, e.g. "Salle B12".
        #[arg(long, value_name = "LABEL", default_value = "")]
        label: String,
        /// Word list of the code: en or fr.
        #[arg(long, value_name = "LANG", default_value = "en")]
        language: String,
    },
    /// Join a room with its code (the four words; asked for when not given).
    Join {
        /// The code's words, e.g. `abandon ability able about`.
        words: Vec<String>,
        /// Which room, when several are announced: its id or its label.
        #[arg(long, value_name = "ID|LABEL")]
        room: Option<String>,
        /// A member's address (host:port), when discovery does not reach it; needs --room ID.
        #[arg(long, value_name = "ADDR")]
        peer: Option<String>,
        /// The room's epoch, with --peer (when its code was changed).
        #[arg(long, value_name = "N", requires = "peer")]
        epoch: Option<u32>,
    },
    /// Show the room: label, id, epoch, and this machine's fingerprint.
    Show {
        /// Print one JSON document instead of text.
        #[arg(long)]
        json: bool,
    },
    /// List the rooms announced on the network.
    List {
        /// Print one JSON document instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Leave the room (this machine forgets its code).
    Leave,
    /// Change the room's code: old sessions end, members join again with the new code.
    Rotate,
    /// Print the current code again (administrators).
    Reveal,
}

#[derive(Debug, Subcommand)]
pub enum LimitsCommand {
    /// Show the limits.
    Show {
        /// Print one JSON document instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Change some limits; those not given keep their value.
    Set {
        /// CPU time lent, percent of the whole machine (0-100).
        #[arg(long, value_name = "PCT", value_parser = parse_percent)]
        cpu: Option<u32>,
        /// Memory lent, e.g. 2G, 512M, 1.5GiB (binary units; KB/MB/GB are decimal).
        #[arg(long, value_name = "SIZE")]
        ram: Option<String>,
        /// Share of each GPU lent, percent (0-100).
        #[arg(long, value_name = "PCT", value_parser = parse_percent)]
        gpu: Option<u32>,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OnOff {
    On,
    Off,
}

/// A whole number with an optional `%`. The range is checked by the service, so the CLI
/// and every other client give the same message.
fn parse_percent(text: &str) -> Result<u32, String> {
    let digits = text.trim().trim_end_matches('%').trim_end();
    digits
        .parse()
        .map_err(|_| format!("'{text}' is not a percentage (a whole number, e.g. 50)"))
}

/// `ADDRESS:PORT` or `ADDRESS:FIRST-LAST`, IPv4 (peers are IPv4, see `NetworkMode`).
fn parse_peer(text: &str) -> Result<PeerAccess, String> {
    let bad = || format!("'{text}' is not ADDRESS:PORT or ADDRESS:FIRST-LAST (IPv4)");
    let (address, ports) = text.rsplit_once(':').ok_or_else(bad)?;
    let address = address.parse().map_err(|_| bad())?;
    let (first, last) = ports.split_once('-').unwrap_or((ports, ports));
    let (first_port, last_port) = (
        first.parse().map_err(|_| bad())?,
        last.parse().map_err(|_| bad())?,
    );
    if first_port == 0 || first_port > last_port {
        return Err(bad());
    }
    Ok(PeerAccess {
        address,
        first_port,
        last_port,
    })
}

/// `NAME=VALUE`: a shell-style name, so the variable can be read by the command at all.
fn parse_env(text: &str) -> Result<(String, String), String> {
    let (name, value) = text
        .split_once('=')
        .ok_or_else(|| format!("'{text}' is not NAME=VALUE"))?;
    let mut chars = name.chars();
    let valid = chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !valid {
        return Err(format!(
            "'{name}' is not a variable name (letters, digits and '_', not starting with a digit)"
        ));
    }
    Ok((name.to_owned(), value.to_owned()))
}

/// Seconds, or a sequence of number-unit pairs (`s`, `m`, `h`, `d`) such as `1h30m`.
fn parse_duration(text: &str) -> Result<u64, String> {
    let bad = || format!("'{text}' is not a duration (seconds, or e.g. 90s, 30m, 2h, 1h30m)");
    let trimmed = text.trim();
    if let Ok(seconds) = trimmed.parse::<u64>() {
        return if seconds == 0 { Err(bad()) } else { Ok(seconds) };
    }
    let mut total: u64 = 0;
    let mut number = String::new();
    for c in trimmed.chars() {
        if c.is_ascii_digit() {
            number.push(c);
            continue;
        }
        let unit = match c {
            's' => 1,
            'm' => 60,
            'h' => 3600,
            'd' => 86_400,
            _ => return Err(bad()),
        };
        let value: u64 = number.parse().map_err(|_| bad())?;
        number.clear();
        total = value
            .checked_mul(unit)
            .and_then(|v| total.checked_add(v))
            .ok_or_else(bad)?;
    }
    if !number.is_empty() || total == 0 {
        return Err(bad());
    }
    Ok(total)
}

#[cfg(test)]
mod run_tests;

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_grammar_is_consistent() {
        Args::command().debug_assert();
    }

    #[test]
    fn percentages_take_an_optional_percent_sign() {
        assert_eq!(parse_percent("50"), Ok(50));
        assert_eq!(parse_percent("50%"), Ok(50));
        assert_eq!(parse_percent("150"), Ok(150));
        assert!(parse_percent("-5").is_err());
        assert!(parse_percent("half").is_err());
    }
}
