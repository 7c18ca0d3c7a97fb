// SPDX-License-Identifier: GPL-3.0-or-later
//! `partagpuctl`: control the local `partagpud` from a terminal or a script.
//!
//! Errors: one line on stderr (`partagpuctl: …`), exit status 1; usage errors exit 2.
//! Every listing takes `--json` and then prints exactly one JSON document on stdout.

mod args;
mod jobs;
mod peers;
mod room;
mod run;
mod security_log;
mod status;

use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Parser;
use partagpu_client::Client;
use partagpu_core::size::parse_size;
use partagpu_core::LimitsUpdate;

use crate::args::{Args, Command, LimitsCommand, OnOff};

fn main() -> ExitCode {
    let args = Args::parse();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build();
    let result = runtime
        .context("cannot start the async runtime")
        .and_then(|rt| rt.block_on(run(args)));
    match result {
        Ok(status) => ExitCode::from(status),
        Err(error) => {
            // One line: the chain of causes joined, as `anyhow`'s alternate format does.
            eprintln!("partagpuctl: {error:#}");
            ExitCode::FAILURE
        }
    }
}

/// The exit status: 0, or what a job command reports (the job's own status for `run`).
async fn run(args: Args) -> Result<u8> {
    let client = Client::connect_system().await?;
    match args.command {
        Command::Run(args) => run::run(&client, args).await,
        Command::Job { command } => jobs::run(&client, command).await,
        command => settings(&client, command).await.map(|()| 0),
    }
}

async fn settings(client: &Client, command: Command) -> Result<()> {
    match command {
        Command::Status { json } => status::print(&client.status().await?, json),
        Command::Limits {
            command: LimitsCommand::Show { json },
        } => status::print_limits(&client.limits().await?, json),
        Command::Limits {
            command: LimitsCommand::Set { cpu, ram, gpu },
        } => {
            let ram_bytes = ram.as_deref().map(parse_size).transpose()?;
            let update = LimitsUpdate {
                cpu_percent: cpu,
                ram_bytes,
                gpu_percent: gpu,
            };
            if update == LimitsUpdate::default() {
                anyhow::bail!("give at least one of --cpu, --ram or --gpu");
            }
            client.set_limits(update).await?;
            status::print_limits(&client.limits().await?, false)
        }
        Command::Pause => {
            client.set_paused(true).await?;
            println!(
                "Paused: running work is frozen and nothing new starts. Resume with: partagpuctl resume"
            );
            Ok(())
        }
        Command::Resume => {
            client.set_paused(false).await?;
            println!("Resumed: this machine lends again within its limits.");
            Ok(())
        }
        Command::Sharing { state } => {
            client.set_sharing(state == OnOff::On).await?;
            match state {
                OnOff::On => println!("Sharing is on."),
                OnOff::Off => println!("Sharing is off: this machine refuses new work."),
            }
            Ok(())
        }
        Command::Rename { name } => {
            client.set_display_name(&name).await?;
            println!(
                "This machine is now shown as \"{}\".",
                client.sharing().display_name().await?
            );
            Ok(())
        }
        Command::Room { command } => room::run(client, command).await,
        Command::Peers { json } => peers::run(client, json).await,
        Command::SecurityLog { json, after, limit } => {
            security_log::print(&client.security_events(after, limit).await?, json)
        }
        Command::Jobs { json } => jobs::list(client, json).await,
        // Handled by `run`, which needs their exit status.
        Command::Run(_) | Command::Job { .. } => Ok(()),
    }
}
