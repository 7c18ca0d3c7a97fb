// SPDX-License-Identifier: GPL-3.0-or-later
//! This machine's side of the fleet: its state as the room sees it, published again after
//! every probe (live load, every 2 s), at once after every change of the owner's policy
//! (pause, limits, name), so the room sees a pause within the time of one message, and at
//! once when a job starts or ends here.

use std::sync::{Arc, OnceLock};

use partagpu_core::fleet::{NodeState, RuntimeInfo, MAX_JOBS_RUNNING, MAX_RUNTIMES, MAX_VERSION_CHARS};
use partagpu_core::job::record::JobRole;
use partagpu_core::job::state::JobState;
use tokio::sync::broadcast::error::RecvError;

use super::Fleet;
use crate::jobs::manager::JobManager;
use crate::jobs::runtime::Runtime;
use crate::service::MachineState;
use crate::sharing::SharingStore;

/// Builds and publishes this machine's state.
pub struct LocalPublisher {
    /// The fleet to publish into.
    pub fleet: Arc<Fleet>,
    /// The probe results.
    pub machine: Arc<MachineState>,
    /// The owner's policy.
    pub store: Arc<SharingStore>,
    /// This partagpud's version.
    pub version: String,
    /// The jobs of this machine, set once they exist ([`Self::attach_jobs`]): the publisher
    /// is built before the job manager and says "no job" until then.
    pub jobs: OnceLock<JobManager>,
}

impl LocalPublisher {
    /// Publishes the state now.
    pub fn publish(&self) {
        let mut state = node_state(&self.version, &self.machine.resources(), &self.store.policy());
        state.runtimes = self.machine.runtimes();
        state.jobs_running = self.jobs.get().map_or(0, jobs_running);
        self.fleet.publish_local(state);
    }

    /// Hands over the job manager once it exists, and publishes at once. A second call is
    /// ignored (there is one manager per service).
    pub fn attach_jobs(&self, jobs: JobManager) {
        if self.jobs.set(jobs).is_err() {
            tracing::warn!("the job manager was handed to the fleet twice; keeping the first");
        }
        self.publish();
    }

    /// Publishes after every job state change (the count of jobs running here may differ;
    /// an unchanged state is not sent again), for as long as the manager lives. Returns at
    /// once when no manager was attached.
    pub async fn follow_jobs(self: Arc<Self>) {
        let Some(jobs) = self.jobs.get() else {
            return;
        };
        let mut changes = jobs.shared.subscribe();
        loop {
            match changes.recv().await {
                // A lagging receiver missed some changes: the count is read afresh anyway.
                Ok(_) | Err(RecvError::Lagged(_)) => self.publish(),
                Err(RecvError::Closed) => return,
            }
        }
    }

    /// Publishes after every policy change, for as long as the store lives.
    pub async fn follow_policy(self: Arc<Self>) {
        let mut changes = self.store.subscribe();
        while changes.changed().await.is_ok() {
            self.publish();
        }
    }
}

/// How many jobs run here now (paused ones included), for any submitter.
#[must_use]
pub fn jobs_running(jobs: &JobManager) -> u32 {
    let count = jobs
        .shared
        .all()
        .iter()
        .map(|entry| entry.record())
        .filter(|record| {
            matches!(record.role, JobRole::Here | JobRole::Both)
                && matches!(record.state, JobState::Running | JobState::Paused)
        })
        .count();
    u32::try_from(count).unwrap_or(u32::MAX).min(MAX_JOBS_RUNNING)
}

/// The runtimes as the room (and `Machine1.Runtimes`) sees them, within the bounds of §7.5:
/// a runtime whose name the room would refuse is left out with a warning (it would make the
/// whole state refused), versions are cut to printable ASCII of at most
/// [`MAX_VERSION_CHARS`], an empty one is "none". Called once, after the runtimes are probed.
#[must_use]
pub fn runtime_infos(runtimes: &[Runtime]) -> Vec<RuntimeInfo> {
    let version = |text: &str| -> Option<String> {
        let kept: String = text
            .chars()
            .filter(|c| c.is_ascii() && !c.is_ascii_control())
            .take(MAX_VERSION_CHARS)
            .collect();
        Some(kept).filter(|v| !v.is_empty())
    };
    runtimes
        .iter()
        .filter_map(|runtime| {
            let info = RuntimeInfo {
                name: runtime.name.clone(),
                python: version(&runtime.python_version)?,
                torch: runtime.torch_version.as_deref().and_then(version),
                cuda: runtime.cuda.as_deref().and_then(version),
            };
            if info.fits() {
                Some(info)
            } else {
                tracing::warn!(
                    name = runtime.name,
                    "a runtime is not told to the room: its name is not [a-z0-9][a-z0-9._-]{{0,31}}"
                );
                None
            }
        })
        .take(MAX_RUNTIMES)
        .collect()
}

/// This machine's state as it tells the room, without its jobs and runtimes (0 and none;
/// [`LocalPublisher::publish`] adds them).
#[must_use]
pub fn node_state(
    version: &str,
    resources: &partagpu_core::Resources,
    policy: &partagpu_core::SharingPolicy,
) -> NodeState {
    let short = |text: &str| -> String {
        text.chars()
            .filter(|c| !c.is_control())
            .take(partagpu_core::fleet::MAX_TEXT_CHARS)
            .collect()
    };
    let mut cpu = resources.cpu.clone();
    cpu.model = short(&cpu.model);
    cpu.usage_percent = cpu.usage_percent.clamp(0.0, 100.0);
    let gpus = resources
        .gpus
        .iter()
        .take(partagpu_core::fleet::MAX_GPUS)
        .map(|gpu| partagpu_core::GpuInfo {
            name: short(&gpu.name),
            uuid: short(&gpu.uuid),
            ..gpu.clone()
        })
        .collect();
    let gpu_probe = match &resources.gpu_probe {
        partagpu_core::GpuProbeStatus::Unavailable(reason) => {
            partagpu_core::GpuProbeStatus::Unavailable(short(reason))
        }
        available => available.clone(),
    };
    NodeState {
        name: policy.display_name.clone(),
        version: short(version),
        sharing: policy.state(),
        limits: policy.limits,
        cpu,
        memory: resources.memory,
        load: resources.load,
        gpus,
        gpu_probe,
        jobs_running: 0,
        runtimes: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use partagpu_core::job::record::JobRecord;

    use super::*;
    use crate::config::Config;
    use crate::jobs::exec::Executor;
    use crate::jobs::manager::JobEntry;

    fn runtime(name: &str, python: &str, torch: Option<&str>, cuda: Option<&str>) -> Runtime {
        Runtime {
            name: name.into(),
            python: PathBuf::from("/usr/bin/python3"),
            python_version: python.into(),
            torch_version: torch.map(str::to_owned),
            cuda: cuda.map(str::to_owned),
            binds: Vec::new(),
        }
    }

    #[test]
    fn runtimes_are_told_within_the_bounds_of_the_room() {
        let long = "9".repeat(MAX_VERSION_CHARS + 10);
        let runtimes = [
            runtime("torch", "3.12.3", Some("2.5.1+cu121"), Some("12.1")),
            runtime("Bad Name", "3.12.3", None, None),
            runtime("cpu", "3.11.9\n", Some(""), None),
            runtime("long", &long, Some("2.5.1é"), None),
        ];
        let told = runtime_infos(&runtimes);
        let expected = [
            ("torch", "3.12.3".to_owned(), Some("2.5.1+cu121"), Some("12.1")),
            ("cpu", "3.11.9".to_owned(), None, None),
            ("long", "9".repeat(MAX_VERSION_CHARS), Some("2.5.1"), None),
        ];
        let expected: Vec<RuntimeInfo> = expected
            .into_iter()
            .map(|(name, python, torch, cuda)| RuntimeInfo {
                name: name.into(),
                python,
                torch: torch.map(str::to_owned),
                cuda: cuda.map(str::to_owned),
            })
            .collect();
        assert_eq!(told, expected);
        let many: Vec<Runtime> = (0..MAX_RUNTIMES + 3)
            .map(|i| runtime(&format!("r{i}"), "3.12.3", None, None))
            .collect();
        assert_eq!(runtime_infos(&many).len(), MAX_RUNTIMES);
    }

    fn record(job: &str, role: &str, state: &str) -> JobRecord {
        serde_json::from_value(serde_json::json!({
            "job": job, "id": job, "attempt": 1, "submitter": "a1", "node": "b2",
            "role": role, "argv": ["python", "train.py"], "state": state, "created_ms": 1,
        }))
        .unwrap()
    }

    #[tokio::test]
    async fn jobs_running_counts_running_and_paused_jobs_executed_here() {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(SharingStore::open(dir.path(), &Config::default(), 8 << 30, "pc").unwrap());
        let executor = Executor::disabled(dir.path().join("run"), "not in this test");
        let jobs = JobManager::open(executor, dir.path(), store, "b2".into()).unwrap();
        assert_eq!(jobs_running(&jobs), 0);
        let cases = [
            ("j1", "here", "running"),
            ("j2", "both", "paused"),
            ("j3", "submitted", "running"),
            ("j4", "here", "accepted"),
            ("j5", "both", "succeeded"),
            ("j6", "here", "running"),
        ];
        for (job, role, state) in cases {
            jobs.shared
                .insert(Arc::new(JobEntry::new(record(job, role, state))));
        }
        assert_eq!(jobs_running(&jobs), 3, "j1, j2 and j6");

        // The publisher tells the room, once handed the manager and at each job change.
        let resources = partagpu_core::Resources {
            cpu: partagpu_core::CpuInfo {
                model: "Test CPU".into(),
                cores: 4,
                usage_percent: 1.0,
            },
            memory: partagpu_core::MemoryInfo {
                total_bytes: 8 << 30,
                available_bytes: 4 << 30,
            },
            load: partagpu_core::LoadAverage::default(),
            gpus: Vec::new(),
            gpu_probe: partagpu_core::GpuProbeStatus::Unavailable("none".into()),
            jobs: partagpu_core::JobsUsage::default(),
        };
        let machine = Arc::new(MachineState::new("0.1.0".into(), 7655, resources.clone()));
        let torch = runtime_infos(&[runtime("torch", "3.12.3", Some("2.5.1"), None)]);
        let _ = machine.set_runtimes(torch.clone());
        let sharing = Arc::clone(&jobs.shared.sharing);
        let state = node_state("0.1.0", &resources, &sharing.policy());
        let fleet = Arc::new(Fleet::new("b2".repeat(16), 7655, state));
        let local = Arc::new(LocalPublisher {
            fleet: Arc::clone(&fleet),
            machine,
            store: sharing,
            version: "0.1.0".into(),
            jobs: OnceLock::new(),
        });
        local.publish();
        assert_eq!(
            (fleet.local().jobs_running, fleet.local().runtimes.clone()),
            (0, torch.clone())
        );
        local.attach_jobs(jobs.clone());
        assert_eq!(fleet.local().jobs_running, 3);
        tokio::spawn(Arc::clone(&local).follow_jobs());
        tokio::task::yield_now().await;
        let j4 = jobs.shared.find("j4").unwrap();
        jobs.shared.commit(&j4, |r| r.state = JobState::Running);
        let told = tokio::time::timeout(std::time::Duration::from_secs(5), async {
            while fleet.local().jobs_running != 4 {
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            }
        })
        .await;
        assert!(told.is_ok(), "a job that starts is told at once");
        assert_eq!(fleet.local().runtimes, torch);
    }
}
