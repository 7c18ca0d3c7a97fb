// SPDX-License-Identifier: GPL-3.0-or-later
//! The admin's configuration file (`/etc/partagpu/partagpu.toml`).
//!
//! It sets first-start defaults; once the owner changes something, the state directory wins.
//! A missing file means "all defaults"; a malformed one stops the service with a clear message,
//! because silently ignoring an admin's file would image 20 machines wrongly.

pub mod room;

use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use partagpu_core::policy::validate_display_name;
use partagpu_core::size::parse_size;
use partagpu_core::{Limits, PolicyError, SharingPolicy};
use serde::Deserialize;
use zeroize::Zeroizing;

pub use self::room::{check_code_file, ConfigCode, RoomConfig};
use crate::discovery::{Ipv4Prefix, Scope};

/// Where the config file lives when `--config` is not given.
pub const DEFAULT_CONFIG_PATH: &str = "/etc/partagpu/partagpu.toml";

/// Default bound of the security journal.
pub const DEFAULT_MAX_JOURNAL_EVENTS: usize = 10_000;

/// The config file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// Unreadable.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// Which file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Not valid TOML, or unknown keys, or wrong types.
    #[error("{}: {message}", path.display())]
    Syntax {
        /// Which file.
        path: PathBuf,
        /// The parser's explanation, with line and column but never the line itself (the
        /// file may hold a room code).
        message: String,
    },
    /// Parsed but out of range.
    #[error("{}: {source}", path.display())]
    Invalid {
        /// Which file.
        path: PathBuf,
        /// What is wrong.
        source: PolicyError,
    },
}

/// The whole file.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// How the room sees this machine; default: the host name.
    pub display_name: Option<String>,
    /// First-start sharing defaults.
    #[serde(default)]
    pub sharing: SharingDefaults,
    /// Security journal settings.
    #[serde(default)]
    pub journal: JournalConfig,
    /// Where discovery looks and whom it dials.
    #[serde(default)]
    pub discovery: DiscoveryConfig,
    /// How jobs run here.
    #[serde(default)]
    pub jobs: JobsConfig,
    /// Pausing when the owner comes back.
    #[serde(default)]
    pub owner: crate::owner::OwnerConfig,
    /// The room to join at the first boot (a lab image), if any.
    pub room: Option<RoomConfig>,
    /// Why `[room]` was dropped at load (the file's owner or mode), to journal at start.
    #[serde(skip)]
    pub room_refused: Option<String>,
}

/// `[jobs]`: how jobs run on this machine (docs/jobs.md).
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct JobsConfig {
    /// The unprivileged account jobs run as (default "partagpu-job").
    pub user: Option<String>,
    /// This service's cgroup subtree name (default "partagpu").
    pub cgroup_root: Option<String>,
    /// Seconds a pause may last before the jobs are stopped as `preempted` (default 300).
    pub pause_grace_s: Option<u64>,
    /// Size of a job's /workspace tmpfs, e.g. "2G" (default 2 GiB).
    pub workspace_size: Option<String>,
    /// Size of a job's /tmp tmpfs (default 1 GiB).
    pub tmp_size: Option<String>,
    /// Most processes and threads of one job (default 1024).
    pub max_processes: Option<u64>,
    /// Python runtimes jobs may use; the first is the default. None: the system's python3.
    #[serde(default)]
    pub runtimes: Vec<crate::jobs::runtime::RuntimeConfig>,
}

/// `[discovery]`: both empty means automatic (every LAN interface, peers on their subnets).
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DiscoveryConfig {
    /// Interfaces to announce and browse on, e.g. `["enp3s0"]`; they may be virtual.
    #[serde(default)]
    pub interfaces: Vec<String>,
    /// Prefixes peers must be in, e.g. `["10.12.0.0/16"]`, for labs split across subnets.
    #[serde(default)]
    pub prefixes: Vec<String>,
}

impl JobsConfig {
    /// Refuses values the executor could not use, so a typo stops the service instead of
    /// being silently replaced by a default.
    fn check(&self) -> Result<(), String> {
        for (key, value) in [
            ("workspace_size", &self.workspace_size),
            ("tmp_size", &self.tmp_size),
        ] {
            if let Some(value) = value {
                match parse_size(value) {
                    Ok(bytes) if bytes >= 1 << 20 => {}
                    Ok(_) => return Err(format!("[jobs] {key}: {value} is smaller than 1 MiB")),
                    Err(e) => return Err(format!("[jobs] {key}: {e}")),
                }
            }
        }
        if self.max_processes == Some(0) {
            return Err("[jobs] max_processes: it must be at least 1".into());
        }
        let mut names = std::collections::BTreeSet::new();
        for runtime in &self.runtimes {
            let valid = runtime.name.len() <= 32
                && runtime
                    .name
                    .starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
                && runtime
                    .name
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "._-".contains(c));
            if !valid {
                return Err(format!(
                    "[[jobs.runtimes]] name {:?}: use a-z, 0-9, '.', '_' and '-', at most 32",
                    runtime.name
                ));
            }
            if !runtime.python.is_absolute() {
                return Err(format!(
                    "[[jobs.runtimes]] {}: python must be an absolute path",
                    runtime.name
                ));
            }
            if !names.insert(runtime.name.as_str()) {
                return Err(format!("[[jobs.runtimes]] {}: declared twice", runtime.name));
            }
        }
        Ok(())
    }
}

/// `[sharing]`: the policy a fresh machine starts with.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SharingDefaults {
    /// Sharing on at first start (default true).
    pub enabled: Option<bool>,
    /// CPU share, percent (default 50).
    pub cpu_percent: Option<u32>,
    /// RAM lent, a size like "8G" (default half of the machine).
    pub ram: Option<String>,
    /// GPU share, percent (default 50).
    pub gpu_percent: Option<u32>,
}

/// `[journal]`.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct JournalConfig {
    /// Events kept; older ones are dropped.
    #[serde(default = "default_max_events")]
    pub max_events: usize,
}

impl Default for JournalConfig {
    fn default() -> Self {
        Self {
            max_events: DEFAULT_MAX_JOURNAL_EVENTS,
        }
    }
}

fn default_max_events() -> usize {
    DEFAULT_MAX_JOURNAL_EVENTS
}

impl Config {
    /// Reads and parses `path`; a missing file gives the defaults.
    ///
    /// # Errors
    /// [`ConfigError`] for an unreadable or malformed file.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let read_error = |source| ConfigError::Read {
            path: path.to_owned(),
            source,
        };
        let mut file = match std::fs::File::open(path) {
            Ok(file) => file,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                tracing::info!(path = %path.display(), "no config file; using defaults");
                return Ok(Self::default());
            }
            Err(source) => return Err(read_error(source)),
        };
        // The owner and mode of the file read, not of whatever the path names later.
        let metadata = file.metadata().map_err(read_error)?;
        let mut text = Zeroizing::new(String::new());
        file.read_to_string(&mut text).map_err(read_error)?;
        let mut config = Self::parse(&text).map_err(|error| match error {
            ParseError::Syntax(message) => ConfigError::Syntax {
                path: path.to_owned(),
                message,
            },
            ParseError::Invalid(source) => ConfigError::Invalid {
                path: path.to_owned(),
                source,
            },
        })?;
        if config.room.is_some() {
            if let Err(reason) = check_code_file(metadata.uid(), metadata.mode()) {
                // The service still starts: the machine is usable, it just joins nothing.
                config.room = None;
                config.room_refused = Some(format!("{}: {reason}", path.display()));
            }
        }
        Ok(config)
    }

    fn parse(text: &str) -> Result<Self, ParseError> {
        let config: Self =
            toml::from_str(text).map_err(|e| ParseError::Syntax(room::render_toml_error(&e, text)))?;
        if let Some(name) = &config.display_name {
            validate_display_name(name).map_err(ParseError::Invalid)?;
        }
        for prefix in &config.discovery.prefixes {
            prefix
                .parse::<Ipv4Prefix>()
                .map_err(|e| ParseError::Syntax(format!("[discovery] prefixes: {e}")))?;
        }
        if let Some(ram) = &config.sharing.ram {
            parse_size(ram).map_err(|e| ParseError::Syntax(format!("[sharing] ram: {e}")))?;
        }
        config.jobs.check().map_err(ParseError::Syntax)?;
        if let Some(room) = &config.room {
            room.check().map_err(ParseError::Syntax)?;
        }
        Ok(config)
    }

    /// Where discovery looks; `interface` (from the command line) is added to the pinned ones.
    #[must_use]
    pub fn scope(&self, interface: Option<&str>) -> Scope {
        let mut interfaces = self.discovery.interfaces.clone();
        interfaces.extend(interface.map(str::to_owned));
        // Already checked by `parse`.
        let prefixes = self
            .discovery
            .prefixes
            .iter()
            .filter_map(|p| p.parse().ok())
            .collect();
        Scope::new(interfaces, prefixes)
    }

    /// The policy of a machine that has never been configured by its owner.
    ///
    /// # Errors
    /// When the configured defaults do not fit this machine (e.g. more RAM than it has).
    pub fn initial_policy(
        &self,
        ram_total_bytes: u64,
        host_name: &str,
    ) -> Result<SharingPolicy, PolicyError> {
        let defaults = Limits::default_for(ram_total_bytes);
        let ram_bytes = match &self.sharing.ram {
            // Already checked by `parse`.
            Some(ram) => parse_size(ram).unwrap_or(defaults.ram_bytes),
            None => defaults.ram_bytes,
        };
        let policy = SharingPolicy {
            enabled: self.sharing.enabled.unwrap_or(true),
            paused: false,
            limits: Limits {
                cpu_percent: self.sharing.cpu_percent.unwrap_or(defaults.cpu_percent),
                ram_bytes,
                gpu_percent: self.sharing.gpu_percent.unwrap_or(defaults.gpu_percent),
            },
            display_name: self.display_name_for(host_name),
        };
        policy.validate(ram_total_bytes)?;
        Ok(policy)
    }

    /// The name this machine shows when nobody chose one: the config's, else the host name.
    #[must_use]
    pub fn display_name_for(&self, host_name: &str) -> String {
        let name = self.display_name.as_deref().unwrap_or(host_name);
        validate_display_name(name).unwrap_or("partagpu").to_owned()
    }
}

enum ParseError {
    Syntax(String),
    Invalid(PolicyError),
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;

    #[test]
    fn an_empty_file_gives_half_of_everything_under_the_host_name() {
        let config = Config::parse("").ok().unwrap();
        let policy = config.initial_policy(16 * GIB, "pc-07").unwrap();
        assert_eq!(policy, SharingPolicy::default_for(16 * GIB, "pc-07".into()));
    }

    #[test]
    fn the_jobs_section_is_read_and_its_mistakes_refused() {
        let text = "[jobs]\nuser = \"pg\"\npause_grace_s = 3\nworkspace_size = \"4G\"\n\
                    [[jobs.runtimes]]\nname = \"torch\"\npython = \"/opt/venv/bin/python\"\n";
        let config = Config::parse(text).ok().unwrap();
        assert_eq!(
            (config.jobs.pause_grace_s, config.jobs.runtimes[0].name.as_str()),
            (Some(3), "torch")
        );
        for (bad, says) in [
            ("[jobs]\nworkspace_size = \"lots\"", "[jobs] workspace_size"),
            ("[jobs]\ntmp_size = \"1K\"", "smaller than 1 MiB"),
            ("[jobs]\nmax_processes = 0", "at least 1"),
            ("[[jobs.runtimes]]\nname = \"Torch\"\npython = \"/p\"", "use a-z"),
            (
                "[[jobs.runtimes]]\nname = \"t\"\npython = \"venv/bin/python\"",
                "absolute",
            ),
            ("[jobs]\nshell = true", "unknown field"),
        ] {
            match Config::parse(bad) {
                Err(ParseError::Syntax(message)) => assert!(message.contains(says), "{bad}: {message}"),
                _ => panic!("{bad} accepted"),
            }
        }
    }

    #[test]
    fn configured_defaults_are_used() {
        let text = "display_name = \"B12-03\"\n[sharing]\nenabled = false\ncpu_percent = 80\nram = \"4G\"\ngpu_percent = 100\n[journal]\nmax_events = 50\n";
        let config = Config::parse(text).ok().unwrap();
        assert_eq!(config.journal.max_events, 50);
        assert_eq!(config.scope(None), Scope::default());
        let pinned = Config::parse("[discovery]\ninterfaces = [\"enp3s0\"]\nprefixes = [\"10.12.0.0/16\"]")
            .ok()
            .unwrap()
            .scope(Some("eth1"));
        assert_eq!(
            pinned,
            Scope::new(
                vec!["enp3s0".into(), "eth1".into()],
                vec!["10.12.0.0/16".parse().unwrap()]
            )
        );
        let policy = config.initial_policy(16 * GIB, "ignored").unwrap();
        assert_eq!(policy.display_name, "B12-03");
        assert!(!policy.enabled);
        assert_eq!(
            policy.limits,
            Limits {
                cpu_percent: 80,
                ram_bytes: 4 * GIB,
                gpu_percent: 100
            }
        );
    }

    #[test]
    fn bad_files_are_refused_with_their_reason() {
        let cases = [
            ("colour = \"red\"", "unknown field"),
            ("[sharing]\ncpu_percent = \"lots\"", "invalid type"),
            ("[sharing]\nram = \"2 elephants\"", "not a size"),
            ("display_name = \"\"", "must not be empty"),
            ("[discovery]\nprefixes = [\"10.0.0.0\"]", "not an IPv4 prefix"),
            ("[discovery]\nvpn = true", "unknown field"),
        ];
        for (text, expected) in cases {
            let message = match Config::parse(text) {
                Err(ParseError::Syntax(message)) => message,
                Err(ParseError::Invalid(error)) => error.to_string(),
                Ok(_) => panic!("{text:?} was accepted"),
            };
            assert!(message.contains(expected), "{text:?}: {message}");
        }
    }

    #[test]
    fn defaults_that_do_not_fit_the_machine_are_refused() {
        let config = Config::parse("[sharing]\ncpu_percent = 120").ok().unwrap();
        assert_eq!(
            config.initial_policy(GIB, "pc"),
            Err(PolicyError::CpuOutOfRange(120))
        );
        let config = Config::parse("[sharing]\nram = \"64G\"").ok().unwrap();
        assert!(matches!(
            config.initial_policy(GIB, "pc"),
            Err(PolicyError::RamAboveTotal { .. })
        ));
    }
}
