// SPDX-License-Identifier: GPL-3.0-or-later
//! `run`: pack the workspace, submit, show the output live, fetch the artifacts, and exit
//! with the job's status so scripts can chain on it.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use partagpu_client::jobs::sha256_hex;
use partagpu_client::workspace::pack_dir;
use partagpu_client::{Client, Jobs};
use partagpu_core::job::record::{JobRecord, JobRole};
use partagpu_core::job::spec::{JobId, JobResources, JobSpec, NetworkMode, DEFAULT_TIME_LIMIT_S};
use partagpu_core::job::state::{ArtifactInfo, JobState};
use partagpu_core::job::workspace::TarWriter;
use partagpu_core::size::format_size;
use tokio::signal::unix::{signal, SignalKind};

use crate::args::RunArgs;
use crate::jobs::{describe, fetch_all, now_ms, place, ran_ms, short_id, show, span, step, More, POLL};

/// Exit status after the user cancelled (as a shell reports SIGINT).
const CANCELLED: u8 = 130;

/// The workspace archive and what it holds.
struct Workspace {
    tar: Vec<u8>,
    sha256: String,
}

pub async fn run(client: &Client, args: RunArgs) -> Result<u8> {
    let workspace = match &args.workspace {
        Some(dir) => {
            let packed = pack_dir(dir).with_context(|| format!("cannot pack {}", dir.display()))?;
            eprintln!(
                "Sending workspace: {} file{}, {}",
                packed.files,
                if packed.files == 1 { "" } else { "s" },
                format_size(packed.tar.len() as u64)
            );
            Workspace {
                tar: packed.tar,
                sha256: packed.sha256,
            }
        }
        None => {
            let tar = TarWriter::new().finish();
            Workspace {
                sha256: sha256_hex(&tar),
                tar,
            }
        }
    };
    let spec = build_spec(&args, random_id()?, &workspace)?;
    let jobs = client.jobs();
    let spec_json = serde_json::to_string(&spec)?;
    let handle = match args.nodes.as_deref() {
        Some(nodes) => {
            let nodes = if nodes == "all" { "" } else { nodes };
            jobs.distribute(&spec_json, &workspace.tar, nodes).await?
        }
        None => {
            jobs.submit(&spec_json, &workspace.tar, args.node.as_deref().unwrap_or(""))
                .await?
        }
    };
    if args.detach {
        println!("{handle}");
        eprintln!(
            "Follow it with: partagpuctl job logs --follow {}",
            short_id(&spec.id.to_hex())
        );
        return Ok(0);
    }
    watch(jobs, &handle).await?;
    let record = show(jobs, &handle).await?;
    let saved = fetch_all(jobs, &record, &args.output).await?;
    let (status, line) = outcome(&record, &saved, now_ms());
    eprintln!("{line}");
    Ok(status)
}

/// The spec sent to the service, checked here first so a mistake is reported before upload.
fn build_spec(args: &RunArgs, id: JobId, workspace: &Workspace) -> Result<JobSpec> {
    let mut env = BTreeMap::new();
    for (name, value) in &args.env {
        if env.insert(name.clone(), value.clone()).is_some() {
            bail!("--env {name} is given twice");
        }
    }
    let defaults = JobResources::default();
    let spec = JobSpec {
        id,
        attempt: 0,
        // The service fills in this machine's node id.
        submitter: "0".repeat(32),
        argv: args.command.clone(),
        env,
        runtime: args.runtime.clone(),
        workspace_bytes: workspace.tar.len() as u64,
        workspace_sha256: workspace.sha256.clone(),
        resources: JobResources {
            cpu_percent: args.cpu.unwrap_or(defaults.cpu_percent),
            ram_bytes: args.ram.unwrap_or(defaults.ram_bytes),
            gpus: args.gpus.unwrap_or(defaults.gpus),
        },
        artifacts_from_all_ranks: false,
        min_nodes: None,
        resume_checkpoint: None,
        artifacts: args.artifacts.clone(),
        network: if args.allow_peers.is_empty() {
            NetworkMode::None
        } else {
            NetworkMode::Peers {
                peers: args.allow_peers.clone(),
            }
        },
        time_limit_s: args.time_limit.unwrap_or(DEFAULT_TIME_LIMIT_S),
    };
    spec.validate()?;
    Ok(spec)
}

fn random_id() -> Result<JobId> {
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .context("cannot read /dev/urandom for a job id")?;
    Ok(JobId::from_random(bytes))
}

/// Streams the output until the job ends. The first Ctrl+C cancels the job and keeps
/// streaming, so its last words and its end are still shown; a second one leaves at once.
async fn watch(jobs: Jobs<'_>, handle: &str) -> Result<()> {
    let mut interrupt = signal(SignalKind::interrupt()).context("cannot watch for Ctrl+C")?;
    let mut cancelling = false;
    let mut offset = 0;
    loop {
        // Dropping a read in flight loses nothing: the offset moves only once it is printed.
        let more = tokio::select! {
            read = step(jobs, handle, offset) => {
                let (next, more) = read?;
                offset = next;
                more
            }
            _ = interrupt.recv() => {
                interrupted(jobs, handle, &mut cancelling).await?;
                continue;
            }
        };
        match more {
            More::Done => return Ok(()),
            More::Now => {}
            More::Later => tokio::select! {
                () = tokio::time::sleep(POLL) => {}
                _ = interrupt.recv() => interrupted(jobs, handle, &mut cancelling).await?,
            },
        }
    }
}

async fn interrupted(jobs: Jobs<'_>, handle: &str, cancelling: &mut bool) -> Result<()> {
    if *cancelling {
        std::process::exit(CANCELLED.into());
    }
    *cancelling = true;
    eprintln!("Cancelling…");
    Ok(jobs.cancel(handle).await?)
}

/// The exit status and the last line: a summary, or why the job did not succeed.
fn outcome(record: &JobRecord, saved: &[(ArtifactInfo, PathBuf)], now: u64) -> (u8, String) {
    let id = short_id(&record.id);
    let state = record.state;
    let artifacts: String = saved
        .iter()
        .map(|(artifact, path)| format!("; {} saved to {}", describe(artifact), shown_path(path)))
        .collect();
    match state {
        JobState::Succeeded => {
            let ran = ran_ms(record, now)
                .map(|ms| format!(" in {}", span(ms)))
                .unwrap_or_default();
            (
                0,
                format!("Job {id} succeeded on {}{ran}{artifacts}", executor(record)),
            )
        }
        JobState::Cancelled => (CANCELLED, format!("Job {id} cancelled{artifacts}")),
        _ => {
            let why = match (&record.reason, record.exit_code) {
                (Some(reason), _) => format!(": {reason}"),
                (None, Some(code)) => format!(": exited with status {code}"),
                (None, None) => String::new(),
            };
            let status = match (state, record.exit_code) {
                (JobState::Failed, Some(code @ 1..=255)) => u8::try_from(code).unwrap_or(1),
                _ => 1,
            };
            (status, format!("partagpuctl: job {id} {state}{why}{artifacts}"))
        }
    }
}

/// The executing machine as the summary names it.
fn executor(record: &JobRecord) -> String {
    match record.role {
        JobRole::Here | JobRole::Both => "this machine".to_owned(),
        JobRole::Submitted | JobRole::Group => place(record).trim_start_matches("→ ").to_owned(),
    }
}

fn shown_path(path: &Path) -> String {
    path.display().to_string()
}

#[cfg(test)]
mod tests;
