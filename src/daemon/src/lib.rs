// SPDX-License-Identifier: GPL-3.0-or-later
//! `partagpud`, the PartaGPU system service.
//!
//! It probes this machine ([`probe`]), keeps the owner's sharing policy ([`sharing`]) and the
//! security journal ([`journal`]) in its state directory, and serves them on the system bus
//! ([`service`]), authorising every change against the caller with polkit ([`auth`]).
//!
//! One current-thread tokio runtime runs everything: the bus, and a refresh loop that
//! re-probes every [`PROBE_INTERVAL`] and signals what changed.

pub mod args;
pub mod auth;
pub mod config;
pub mod config_room;
pub mod discovery;
pub mod error;
pub mod fleet;
pub mod jobs;
pub mod journal;
pub mod membership;
pub mod owner;
pub mod peer;
pub mod probe;
pub mod room;
pub mod service;
pub mod sharing;
pub mod store;
#[cfg(test)]
mod test_support;

use std::fs;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use clap::Parser;
use partagpu_core::ids::{BUS_NAME, OBJECT_PATH};
use partagpu_core::journal::Severity;
use partagpu_core::policy::SharingPolicy;
use tokio::signal::unix::{signal, SignalKind};
use zbus::fdo::{RequestNameFlags, RequestNameReply};

use crate::args::Args;
use crate::config::{Config, ConfigError};
use crate::discovery::Discovery;
use crate::fleet::local::{node_state, runtime_infos, LocalPublisher};
use crate::fleet::Fleet;
use crate::jobs::manager::JobManager;
use crate::journal::SecurityJournal;
use crate::membership::Membership;
use crate::peer::events::{kinds, Reporter};
use crate::peer::{PeerContext, Timing};
use crate::probe::{FakeGpus, GpuBackend, NvmlGpus, Prober, ProcError, ProcFs};
use crate::room::machine::MachineTag;
use crate::room::secrets::SecretsError;
use crate::room::{Opened, RoomState};
use crate::service::{
    FleetIface, JobsIface, MachineIface, MachineState, RoomIface, SecurityIface, SharingIface,
};
use crate::sharing::{ChangeError, SharingStore};
use crate::store::StoreError;

/// How often live load is re-probed (the room sees changes within this).
pub const PROBE_INTERVAL: Duration = Duration::from_secs(2);

/// Why the service could not start. Each message tells the admin what to fix.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The config file is unusable.
    #[error("configuration: {0}")]
    Config(#[from] ConfigError),
    /// A directory could not be created or used.
    #[error("cannot use directory {}: {source}", path.display())]
    Directory {
        /// Which one.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Another instance uses the same state directory.
    #[error("another partagpud already uses the state directory {}", .0.display())]
    StateDirInUse(PathBuf),
    /// `/proc` unreadable.
    #[error("cannot probe this machine: {0}")]
    Probe(#[from] ProcError),
    /// The policy could not be loaded or saved.
    #[error("sharing policy: {0}")]
    Policy(#[from] ChangeError),
    /// The journal could not be opened.
    #[error("security journal: {0}")]
    Journal(#[from] StoreError),
    /// The room secrets file is unusable.
    #[error("room secrets: {0}")]
    Secrets(#[from] SecretsError),
    /// The peer port cannot be opened.
    #[error("cannot listen on the peer port {port}: {source}")]
    PeerPort {
        /// The port.
        port: u16,
        /// Why.
        source: std::io::Error,
    },
    /// The bus name is taken by another process.
    #[error("another process already owns {BUS_NAME} on this system bus")]
    NameTaken,
    /// No system bus.
    #[error("cannot connect to the system bus (DBUS_SYSTEM_BUS_ADDRESS={}): {error}", address.as_deref().unwrap_or("unset"))]
    Bus {
        /// The address asked for, if any.
        address: Option<String>,
        /// What went wrong (boxed: zbus errors are large and start errors are rare).
        error: Box<zbus::Error>,
    },
}

/// Entry point of the `partagpud` binary.
#[must_use]
pub fn main() -> ExitCode {
    let args = Args::parse();
    init_tracing();
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            tracing::error!(%error, "cannot start the async runtime");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            tracing::error!("{error}");
            ExitCode::FAILURE
        }
    }
}

fn init_tracing() {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()));
    // journald adds its own timestamps.
    if std::env::var_os("JOURNAL_STREAM").is_some() {
        builder.without_time().init();
    } else {
        builder.init();
    }
}

fn make_dir(path: &Path, mode: u32) -> Result<(), StartError> {
    fs::DirBuilder::new()
        .recursive(true)
        .mode(mode)
        .create(path)
        .map_err(|source| StartError::Directory {
            path: path.to_owned(),
            source,
        })
}

/// Holds the state directory for this process; released when dropped (or at exit).
fn lock_state_dir(state_dir: &Path) -> Result<fs::File, StartError> {
    let path = state_dir.join("lock");
    let directory_error = |source| StartError::Directory {
        path: state_dir.to_owned(),
        source,
    };
    let file = fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(directory_error)?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(fs::TryLockError::WouldBlock) => Err(StartError::StateDirInUse(state_dir.to_owned())),
        Err(fs::TryLockError::Error(source)) => Err(directory_error(source)),
    }
}

fn host_name(proc_fs: &ProcFs) -> String {
    fs::read_to_string(proc_fs.root().join("proc/sys/kernel/hostname"))
        .map(|name| name.trim().to_owned())
        .unwrap_or_default()
}

/// A state directory copied from another machine (`Opened::Copied`): says so in the
/// journal, and gives this machine its own name again, since the one in the copied policy
/// named the other machine (the rest of the policy is what the image meant to lend).
fn took_over_copied_state(
    reporter: &Reporter,
    store: &SharingStore,
    config: &Config,
    host_name: &str,
    previous_node: &str,
) {
    let name = config.display_name_for(host_name);
    let renamed = store.change(|policy| {
        Ok(SharingPolicy {
            display_name: name.clone(),
            ..policy.clone()
        })
    });
    if let Err(error) = renamed {
        tracing::warn!(%error, "cannot give this machine its own name in the copied sharing policy");
    }
    reporter.report_own(
        Severity::Warning,
        kinds::COPIED_STATE,
        "",
        format!(
            "The state directory was made on another machine (node {previous_node}; its machine id differs, \
             as on a copied disk image): this machine took a new identity key and its own name \
             \"{name}\", forgot the other machine's pins and kept its room and sharing choices"
        ),
    );
}

/// Runs the service until SIGTERM or SIGINT.
///
/// # Errors
/// [`StartError`] when a part the service cannot do without fails at start.
pub async fn run(args: Args) -> Result<(), StartError> {
    let config = Config::load(&args.config)?;
    make_dir(&args.state_dir, 0o700)?;
    make_dir(&args.runtime_dir, 0o755)?;
    let _lock = lock_state_dir(&args.state_dir)?;

    let proc_fs = ProcFs::new("/");
    let gpus: Box<dyn GpuBackend> = match &args.fake_gpus {
        Some(path) => {
            tracing::warn!(path = %path.display(), "reporting fake GPUs from a file (testing only)");
            Box::new(FakeGpus::new(path))
        }
        None => Box::new(NvmlGpus::load()),
    };
    let mut prober = Prober::new(proc_fs.clone(), gpus);
    let resources = prober.probe()?;
    let room = Arc::new(RoomState::open(
        &args.state_dir,
        MachineTag::read(&args.machine_id_file).as_ref(),
    )?);
    let host = host_name(&proc_fs);
    let store = Arc::new(SharingStore::open(
        &args.state_dir,
        &config,
        resources.memory.total_bytes,
        &host,
    )?);
    let journal = Arc::new(Mutex::new(SecurityJournal::open(
        &args.state_dir,
        config.journal.max_events,
    )?));
    let machine = Arc::new(MachineState::new(
        env!("CARGO_PKG_VERSION").to_owned(),
        args.peer_port,
        resources,
    ));

    let reporter = Arc::new(Reporter::new(Arc::clone(&journal)));
    if let Opened::Copied { previous_node } = room.opened() {
        took_over_copied_state(&reporter, &store, &config, &host, previous_node);
    }
    if let Some(reason) = &config.room_refused {
        config_room::report_refusal(&reporter, reason);
    }
    let version = env!("CARGO_PKG_VERSION");
    let fleet = Arc::new(Fleet::new(
        room.info().node_id,
        args.peer_port,
        node_state(version, &machine.resources(), &store.policy()),
    ));
    let local = Arc::new(LocalPublisher {
        fleet: Arc::clone(&fleet),
        machine: Arc::clone(&machine),
        store: Arc::clone(&store),
        version: version.to_owned(),
        jobs: std::sync::OnceLock::new(),
    });
    let peer = Arc::new(PeerContext::new(
        Arc::clone(&room),
        Arc::clone(&reporter),
        Arc::clone(&fleet),
        Timing::default(),
    ));
    let discovery = if args.no_discovery {
        None
    } else {
        match Discovery::start(args.peer_port, config.scope(args.discovery_interface.as_deref())) {
            Ok(discovery) => Some(Arc::new(discovery)),
            Err(error) => {
                tracing::warn!("{error}; joining needs a member's address (--peer)");
                None
            }
        }
    };
    let membership = Arc::new(Membership {
        room: Arc::clone(&room),
        peer: Arc::clone(&peer),
        discovery: discovery.clone(),
    });
    membership.announce();

    let cores = machine.resources().cpu.cores;
    let gpu_indices = machine.resources().gpus.iter().map(|g| g.index).collect();
    let executor = jobs::executor(
        &config.jobs,
        &args.runtime_dir,
        cores,
        gpu_indices,
        args.fake_gpus.is_some(),
        &room.info().node_id,
    )
    .await;
    // Before Machine1 is served: nobody can have read the empty list, no signal is due.
    let _ = machine.set_runtimes(runtime_infos(&executor.runtimes));
    let jobs = JobManager::open(executor, &args.state_dir, Arc::clone(&store), room.info().node_id)?;
    // Every probe from now on also says how much of the use is the room's jobs.
    let watched = jobs.clone();
    prober.watch_jobs(Box::new(move || watched.usage()));
    let _ = peer.jobs.set(jobs.clone());
    for entry in jobs.recover() {
        if entry.record().role == partagpu_core::job::record::JobRole::Group {
            tokio::spawn(jobs::group::coordinate(jobs.clone(), Arc::clone(&peer), entry));
        } else {
            tokio::spawn(jobs::remote::follow(jobs.clone(), Arc::clone(&peer), entry, None));
        }
    }
    // The room learns the runtimes and the jobs running here from now on.
    local.attach_jobs(jobs.clone());
    tokio::spawn(Arc::clone(&local).follow_jobs());

    let connection = connect(&machine, &store, &journal, &membership, &jobs).await?;
    // Bound after the bus name is ours, so a second instance says "name taken" rather than
    // "port in use".
    let listener = tokio::net::TcpListener::bind((args.listen_address, args.peer_port))
        .await
        .map_err(|source| StartError::PeerPort {
            port: args.peer_port,
            source,
        })?;
    reporter.signal_on(connection.clone());
    tokio::spawn(peer::server::serve(listener, Arc::clone(&peer)));
    tokio::spawn(fleet::mesh::run(Arc::clone(&peer), discovery));
    // After the listener: a machine that creates the room must already accept the others.
    if let Some(room) = &config.room {
        let task = config_room::ConfigRoom::new(
            Arc::clone(&membership),
            Arc::clone(&reporter),
            args.state_dir.clone(),
            room,
        );
        tokio::spawn(task.run());
    }
    tokio::spawn(Arc::clone(&local).follow_policy());
    if config.owner.auto_pause {
        match connection
            .object_server()
            .interface::<_, SharingIface>(OBJECT_PATH)
            .await
        {
            Ok(object) => drop(tokio::spawn(owner::run(
                config.owner.clone(),
                connection.clone(),
                Arc::clone(&store),
                args.state_dir.clone(),
                move |paused| {
                    let object = object.clone();
                    async move { SharingIface::set_paused_by_service(&object, paused).await }
                },
            ))),
            Err(error) => tracing::error!(%error, "the Sharing1 object is not served: no auto-pause"),
        }
    }
    match connection
        .object_server()
        .interface::<_, FleetIface>(OBJECT_PATH)
        .await
    {
        Ok(object) => drop(tokio::spawn(service::fleet::signal_changes(
            object,
            Arc::clone(&fleet),
        ))),
        Err(error) => tracing::error!(%error, "the Fleet1 object is not served"),
    }
    match connection
        .object_server()
        .interface::<_, JobsIface>(OBJECT_PATH)
        .await
    {
        Ok(object) => drop(tokio::spawn(service::jobs::signal_changes(object, jobs.clone()))),
        Err(error) => tracing::error!(%error, "the Jobs1 object is not served"),
    }
    let pid_file = args.runtime_dir.join("partagpud.pid");
    if let Err(error) = fs::write(&pid_file, format!("{}\n", std::process::id())) {
        tracing::warn!(%error, path = %pid_file.display(), "cannot write the pid file");
    }
    let policy = store.policy();
    tracing::info!(
        bus_name = BUS_NAME,
        state_dir = %args.state_dir.display(),
        name = %policy.display_name,
        state = policy.state().as_str(),
        gpus = %machine.resources().gpu_probe.to_wire(),
        peer_port = args.peer_port,
        in_room = room.current().is_some(),
        node = %room.info().node_id,
        "partagpud ready"
    );

    serve_until_signal(&connection, &machine, &mut prober, &local).await;
    jobs.shutdown().await;
    if let Some(discovery) = &membership.discovery {
        discovery.withdraw();
    }
    let _ = fs::remove_file(&pid_file);
    tracing::info!("partagpud stopped");
    Ok(())
}

async fn connect(
    machine: &Arc<MachineState>,
    store: &Arc<SharingStore>,
    journal: &Arc<Mutex<SecurityJournal>>,
    membership: &Arc<Membership>,
    jobs: &JobManager,
) -> Result<zbus::Connection, StartError> {
    let bus_error = |error: zbus::Error| StartError::Bus {
        address: std::env::var("DBUS_SYSTEM_BUS_ADDRESS").ok(),
        error: Box::new(error),
    };
    // Objects are served before the name is requested, so a client woken by the name
    // appearing always finds them.
    let connection = zbus::connection::Builder::system()
        .map_err(bus_error)?
        .serve_at(OBJECT_PATH, MachineIface::new(Arc::clone(machine)))
        .map_err(bus_error)?
        .serve_at(OBJECT_PATH, SharingIface::new(Arc::clone(store)))
        .map_err(bus_error)?
        .serve_at(OBJECT_PATH, SecurityIface::new(Arc::clone(journal)))
        .map_err(bus_error)?
        .serve_at(OBJECT_PATH, RoomIface::new(Arc::clone(membership)))
        .map_err(bus_error)?
        .serve_at(
            OBJECT_PATH,
            FleetIface::new(
                Arc::clone(&membership.peer.fleet),
                membership.room.info().fingerprint,
            ),
        )
        .map_err(bus_error)?
        .serve_at(
            OBJECT_PATH,
            JobsIface::new(jobs.clone(), Arc::clone(&membership.peer)),
        )
        .map_err(bus_error)?
        .build()
        .await
        .map_err(bus_error)?;
    // Without DoNotQueue a second instance would wait in the queue forever instead of saying
    // that the name is taken.
    match connection
        .request_name_with_flags(BUS_NAME, RequestNameFlags::DoNotQueue.into())
        .await
    {
        Ok(RequestNameReply::PrimaryOwner | RequestNameReply::AlreadyOwner) => Ok(connection),
        Ok(RequestNameReply::Exists | RequestNameReply::InQueue) | Err(zbus::Error::NameTaken) => {
            Err(StartError::NameTaken)
        }
        Err(error) => Err(bus_error(error)),
    }
}

async fn serve_until_signal(
    connection: &zbus::Connection,
    machine: &MachineState,
    prober: &mut Prober,
    local: &LocalPublisher,
) {
    // Looked up once: the object lives as long as the connection.
    let object = match connection
        .object_server()
        .interface::<_, MachineIface>(OBJECT_PATH)
        .await
    {
        Ok(object) => object,
        Err(error) => {
            tracing::error!(%error, "the Machine1 object is not served");
            return;
        }
    };
    let (Ok(mut terminate), Ok(mut interrupt)) =
        (signal(SignalKind::terminate()), signal(SignalKind::interrupt()))
    else {
        tracing::error!("cannot listen for SIGTERM/SIGINT");
        return;
    };
    // The first probe was taken at start; CPU usage needs a full interval between two.
    let mut ticker = tokio::time::interval_at(tokio::time::Instant::now() + PROBE_INTERVAL, PROBE_INTERVAL);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = terminate.recv() => break,
            _ = interrupt.recv() => break,
            _ = ticker.tick() => {
                refresh(&object, machine, prober).await;
                local.publish();
            }
        }
    }
}

async fn refresh(
    object: &zbus::object_server::InterfaceRef<MachineIface>,
    machine: &MachineState,
    prober: &mut Prober,
) {
    let resources = match prober.probe() {
        Ok(resources) => resources,
        Err(error) => {
            tracing::warn!(%error, "probe failed; keeping the previous values");
            return;
        }
    };
    let changed = machine.update(resources);
    if let Err(error) = object.get().await.emit(changed, object.signal_emitter()).await {
        tracing::debug!(%error, "cannot signal load changes");
    }
}
