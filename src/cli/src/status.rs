// SPDX-License-Identifier: GPL-3.0-or-later
//! `status` and `limits show` output.

use anyhow::Result;
use partagpu_client::StatusView;
use partagpu_core::fleet::RuntimeInfo;
use partagpu_core::size::format_size;
use partagpu_core::{GpuProbeStatus, Limits};

pub fn print(status: &StatusView, json: bool) -> Result<()> {
    if json {
        println!("{}", serde_json::to_string_pretty(status)?);
    } else {
        print!("{}", render(status));
    }
    Ok(())
}

pub fn print_limits(limits: &Limits, json: bool) -> Result<()> {
    if json {
        println!("{}", serde_json::to_string_pretty(limits)?);
    } else {
        println!("{}", render_limits(limits));
    }
    Ok(())
}

fn render_limits(limits: &Limits) -> String {
    format!(
        "Lending CPU {} % · RAM {} · GPU {} %",
        limits.cpu_percent,
        format_size(limits.ram_bytes),
        limits.gpu_percent
    )
}

/// `torch (Python 3.12.3, torch 2.5.1+cu121, CUDA 12.1)`; `system (Python 3.12.3)`.
pub fn describe_runtime(runtime: &RuntimeInfo) -> String {
    let mut parts = vec![format!("Python {}", runtime.python)];
    parts.extend(runtime.torch.as_ref().map(|torch| format!("torch {torch}")));
    parts.extend(runtime.cuda.as_ref().map(|cuda| format!("CUDA {cuda}")));
    format!("{} ({})", runtime.name, parts.join(", "))
}

fn render(view: &StatusView) -> String {
    let status = &view.machine;
    let r = &status.resources;
    let cpu_model = if r.cpu.model.is_empty() {
        "unknown CPU"
    } else {
        &r.cpu.model
    };
    let gpus = match (&r.gpu_probe, r.gpus.is_empty()) {
        (GpuProbeStatus::Unavailable(reason), _) => format!("none ({reason})"),
        (GpuProbeStatus::Available, true) => "none".to_owned(),
        (GpuProbeStatus::Available, false) => r
            .gpus
            .iter()
            .map(|g| {
                format!(
                    "#{} {} — {} of {} used, {} % busy",
                    g.index,
                    g.name,
                    format_size(g.memory_used_bytes),
                    format_size(g.memory_total_bytes),
                    g.utilization_percent
                )
            })
            .collect::<Vec<_>>()
            .join("\n              "),
    };
    let runtimes = if view.runtimes.is_empty() {
        "none (jobs cannot run here)".to_owned()
    } else {
        view.runtimes
            .iter()
            .map(describe_runtime)
            .collect::<Vec<_>>()
            .join("\n              ")
    };
    format!(
        "{name} — {state}\n  Lending     {limits}\n  CPU         {cpu_model}, {cores} cores, {usage:.1} % busy, load {l1:.2} {l5:.2} {l15:.2}\n  Memory      {available} available of {total}\n  GPUs        {gpus}\n  Runtimes    {runtimes}\n  Peer port   {port}\n  Version     {version}\n",
        name = status.display_name,
        state = status.state.as_str(),
        limits = render_limits(&status.limits).trim_start_matches("Lending "),
        cores = r.cpu.cores,
        usage = r.cpu.usage_percent,
        l1 = r.load.one,
        l5 = r.load.five,
        l15 = r.load.fifteen,
        available = format_size(r.memory.available_bytes),
        total = format_size(r.memory.total_bytes),
        port = status.peer_port,
        version = status.version,
    )
}
