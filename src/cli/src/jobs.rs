// SPDX-License-Identifier: GPL-3.0-or-later
//! `jobs` and `job …`: the job table, one job's record, its output and its artifacts.
//! The output and artifact loops are shared with `run`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use partagpu_client::{Client, Jobs};
use partagpu_core::job::record::{JobRecord, JobRole};
use partagpu_core::job::state::ArtifactInfo;
use partagpu_core::size::format_size;

use crate::args::JobCommand;

/// Most output bytes asked for at once.
const LOG_CHUNK: u32 = 64 << 10;
/// How long to wait before asking again when no output came (a bus round trip costs far
/// less; this bounds how late a line appears).
pub const POLL: Duration = Duration::from_millis(50);
/// Widest command shown in the table.
const COMMAND_WIDTH: usize = 40;

pub async fn list(client: &Client, json: bool) -> Result<()> {
    let jobs = client.jobs();
    if json {
        // Unchanged, so scripts see the keys this CLI does not know yet.
        println!("{}", jobs.list_json().await?);
        return Ok(());
    }
    let records: Vec<JobRecord> =
        serde_json::from_str(&jobs.list_json().await?).context("unexpected job list from partagpud")?;
    print!("{}", render_table(&records, now_ms()));
    Ok(())
}

/// One job's record, typed; unknown keys of a newer service are ignored.
pub async fn show(jobs: Jobs<'_>, job: &str) -> Result<JobRecord> {
    serde_json::from_str(&jobs.show_json(job).await?).context("unexpected job record from partagpud")
}

pub async fn run(client: &Client, command: JobCommand) -> Result<u8> {
    let jobs = client.jobs();
    match command {
        JobCommand::Show { job, json: true } => println!("{}", jobs.show_json(&job).await?),
        JobCommand::Show { job, json: false } => print!("{}", render_record(&show(jobs, &job).await?)),
        JobCommand::Logs { job, follow, from } => {
            stream(jobs, &job, from, follow).await?;
        }
        JobCommand::Cancel { job } => {
            jobs.cancel(&job).await?;
            eprintln!("Cancelling job {job}; its end shows in: partagpuctl job show {job}");
        }
        JobCommand::Fetch { job, output } => {
            let record = show(jobs, &job).await?;
            let saved = fetch_all(jobs, &record, &output).await?;
            if saved.is_empty() {
                eprintln!("Job {} has no artifacts.", short_id(&record.id));
            }
            for (artifact, path) in &saved {
                eprintln!("{} saved to {}", describe(artifact), path.display());
            }
        }
    }
    Ok(0)
}

/// Prints the output from `offset` on stdout; with `follow`, until the job ends.
/// Returns the next offset.
pub async fn stream(jobs: Jobs<'_>, job: &str, offset: u64, follow: bool) -> Result<u64> {
    let mut offset = offset;
    loop {
        let (next, more) = step(jobs, job, offset).await?;
        offset = next;
        match more {
            More::Done => return Ok(offset),
            More::Now => {}
            More::Later if follow => tokio::time::sleep(POLL).await,
            More::Later => return Ok(offset),
        }
    }
}

/// What follows one read of the output.
#[derive(Debug, PartialEq, Eq)]
pub enum More {
    /// The job ended and everything was read.
    Done,
    /// Data came: ask again at once.
    Now,
    /// Nothing yet: wait before asking again.
    Later,
}

/// Reads and prints one chunk of output.
pub async fn step(jobs: Jobs<'_>, job: &str, offset: u64) -> Result<(u64, More)> {
    let chunk = jobs.logs(job, offset, LOG_CHUNK).await?;
    let mut out = std::io::stdout().lock();
    out.write_all(&chunk.data)
        .and_then(|()| out.flush())
        .context("cannot write the output")?;
    let more = match (chunk.complete, chunk.data.is_empty()) {
        (true, _) => More::Done,
        (false, false) => More::Now,
        (false, true) => More::Later,
    };
    Ok((chunk.next, more))
}

/// Saves every artifact of `record` under `output`, checked against the record.
pub async fn fetch_all(
    jobs: Jobs<'_>,
    record: &JobRecord,
    output: &Path,
) -> Result<Vec<(ArtifactInfo, PathBuf)>> {
    if !record.artifacts.is_empty() {
        std::fs::create_dir_all(output).with_context(|| format!("cannot create {}", output.display()))?;
    }
    let mut saved = Vec::with_capacity(record.artifacts.len());
    for artifact in &record.artifacts {
        let path = jobs.save_artifact(&record.job, artifact, output).await?;
        saved.push((artifact.clone(), path));
    }
    Ok(saved)
}

/// The first 8 hex digits of a job id, as every message names a job.
pub fn short_id(id: &str) -> &str {
    id.get(..8).unwrap_or(id)
}

/// `out.txt (12 B, sha256 9f86d081…)`.
pub fn describe(artifact: &ArtifactInfo) -> String {
    let sha = artifact.sha256.get(..8).unwrap_or(&artifact.sha256);
    format!(
        "{} ({}, sha256 {sha}…)",
        artifact.name,
        format_size(artifact.size)
    )
}

/// A machine's display name, else the start of its node id.
fn machine(name: &str, node_id: &str) -> String {
    if name.is_empty() {
        format!("{}…", short_id(node_id))
    } else {
        name.to_owned()
    }
}

/// "here", "→ lab-2" or "lab-1 → here".
pub fn place(record: &JobRecord) -> String {
    match record.role {
        JobRole::Both => "here".to_owned(),
        JobRole::Submitted => format!("→ {}", machine(&record.node_name, &record.node)),
        JobRole::Here => format!("{} → here", machine(&record.submitter_name, &record.submitter)),
        JobRole::Group => {
            let names: Vec<&str> = record.parts.iter().map(|p| p.node_name.as_str()).collect();
            format!("→ {}", names.join(", "))
        }
    }
}

/// "12 s", "5 min", "3 h", "2 d".
pub fn span(ms: u64) -> String {
    match ms / 1000 {
        0..=9 => format!("{:.1} s", ms as f64 / 1000.0),
        s @ 10..=59 => format!("{s} s"),
        s @ 60..=7199 => format!("{} min", s / 60),
        s @ 7200..=172_799 => format!("{} h", s / 3600),
        s => format!("{} d", s / 86_400),
    }
}

fn command_line(argv: &[String], width: usize) -> String {
    // A newline or an escape in an argument would break the table (or drive the terminal).
    let line: String = argv
        .join(" ")
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if line.chars().count() <= width {
        return line;
    }
    let mut cut: String = line.chars().take(width - 1).collect();
    cut.push('…');
    cut
}

/// How long the job ran (so far, when it still runs).
pub fn ran_ms(record: &JobRecord, now: u64) -> Option<u64> {
    let start = record.started_ms?;
    Some(record.ended_ms.unwrap_or(now).saturating_sub(start))
}

fn render_table(records: &[JobRecord], now: u64) -> String {
    if records.is_empty() {
        return "No jobs. Start one with: partagpuctl run -- COMMAND\n".to_owned();
    }
    let header = ["JOB", "STATE", "WHERE", "COMMAND", "AGE", "RAN"].map(str::to_owned);
    let rows: Vec<[String; 6]> = std::iter::once(header)
        .chain(records.iter().map(|r| {
            [
                short_id(&r.id).to_owned(),
                r.state.to_string(),
                place(r),
                command_line(&r.argv, COMMAND_WIDTH),
                span(now.saturating_sub(r.created_ms)),
                ran_ms(r, now).map_or_else(|| "-".to_owned(), span),
            ]
        }))
        .collect();
    let mut widths = [0usize; 6];
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in &rows {
        let cells: Vec<String> = row.iter().zip(widths).map(|(c, w)| format!("{c:<w$}")).collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out
}

fn render_record(r: &JobRecord) -> String {
    let mut out = format!("Job {} ({})\n", short_id(&r.id), r.job);
    let reason = r
        .reason
        .as_deref()
        .map(|why| format!(": {why}"))
        .unwrap_or_default();
    out.push_str(&format!("State:     {}{reason}\n", r.state));
    if let Some(code) = r.exit_code {
        out.push_str(&format!("Exit code: {code}\n"));
    }
    out.push_str(&format!("Where:     {}\n", place(r)));
    out.push_str(&format!("Command:   {}\n", command_line(&r.argv, 200)));
    let res = &r.resources;
    out.push_str(&format!(
        "Asked:     CPU {} % · RAM {} · GPUs {}\n",
        res.cpu_percent,
        format_size(res.ram_bytes),
        res.gpus
    ));
    if let Some(ran) = ran_ms(r, now_ms()) {
        out.push_str(&format!("Ran:       {}\n", span(ran)));
    }
    out.push_str(&training::render_parts(&r.parts));
    if let Some(report) = &r.training {
        out.push_str(&training::render_training(report));
    }
    for artifact in &r.artifacts {
        out.push_str(&format!("Artifact:  {}\n", describe(artifact)));
    }
    out
}

pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

mod training;

#[cfg(test)]
pub(crate) mod tests;
