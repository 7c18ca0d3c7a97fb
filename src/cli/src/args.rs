// SPDX-License-Identifier: GPL-3.0-or-later
//! Command-line grammar.

use clap::{Parser, Subcommand, ValueEnum};

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
