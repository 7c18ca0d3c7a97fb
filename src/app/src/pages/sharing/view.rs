// SPDX-License-Identifier: GPL-3.0-or-later
//! Puts a [`SharingModel`] on the page's widgets.

use relm4::adw::prelude::*;
use relm4::{gtk, ComponentSender};

use super::{SharingMsg, SharingPage, SharingWidgets};
use crate::format::{self, now_ms};
use crate::i18n::{i18n, i18n_f};
use crate::pages::sharing::model::SharingModel;
use crate::widgets;

/// Sets a slider only when it differs, so showing a value is not taken for a gesture.
fn show_value(scale: &gtk::Scale, value: f64) {
    if (scale.value() - value).abs() > 0.5 {
        scale.set_value(value);
    }
}

pub(super) fn refresh(model: &SharingModel, w: &SharingWidgets, sender: &ComponentSender<SharingPage>) {
    let (Some(status), Some(limits), Some(gauges)) = (model.status(), model.shown_limits(), model.gauges())
    else {
        return;
    };
    let resources = &status.resources;
    w.group_machine.set_title(&status.display_name);
    let cpu_model = if resources.cpu.model.is_empty() {
        i18n("unknown processor")
    } else {
        resources.cpu.model.clone()
    };
    w.group_machine.set_description(Some(&i18n_f(
        "{} · {} cores · {} of memory · partagpud {}",
        &[
            &cpu_model,
            &resources.cpu.cores.to_string(),
            &format::size(resources.memory.total_bytes),
            &status.version,
        ],
    )));
    w.mode_row.set_subtitle(&match status.state {
        partagpu_core::SharingState::Sharing => {
            i18n("On: the room may run jobs here, within the limits below.")
        }
        partagpu_core::SharingState::Paused => {
            i18n("Paused: running jobs are frozen and nothing new starts.")
        }
        partagpu_core::SharingState::Off => i18n("Off: this machine refuses new work from the room."),
    });
    for (state, button) in &w.mode_buttons {
        button.set_active(*state == status.state);
    }

    let (cpu_row, cpu_scale) = &w.cpu;
    show_value(cpu_scale, f64::from(limits.cpu_percent));
    cpu_row.set_subtitle(&i18n_f(
        "{} of the whole machine",
        &[&format!("{} %", limits.cpu_percent)],
    ));

    let (ram_row, ram_scale) = &w.ram;
    let total = resources.memory.total_bytes as f64;
    if (ram_scale.adjustment().upper() - total).abs() > 0.5 {
        ram_scale.set_range(0.0, total);
        ram_scale.set_increments(
            super::model::RAM_STEP_BYTES as f64,
            super::model::RAM_STEP_BYTES as f64 * 4.0,
        );
    }
    show_value(ram_scale, limits.ram_bytes as f64);
    ram_row.set_subtitle(&i18n_f(
        "{} of {}",
        &[
            &format::size(limits.ram_bytes),
            &format::size(resources.memory.total_bytes),
        ],
    ));

    let (gpu_row, gpu_scale) = &w.gpu;
    show_value(gpu_scale, f64::from(limits.gpu_percent));
    match model.no_gpu_reason() {
        Some(reason) => {
            gpu_scale.set_sensitive(false);
            gpu_row.set_subtitle(&if reason.is_empty() {
                i18n("No graphics card here: jobs use the processor.")
            } else {
                i18n_f(
                    "No graphics card usable here ({}): jobs use the processor.",
                    &[&reason],
                )
            });
        }
        None => {
            gpu_scale.set_sensitive(true);
            gpu_row.set_subtitle(&i18n_f(
                "{} of each graphics card",
                &[&format!("{} %", limits.gpu_percent)],
            ));
        }
    }

    let (cpu_use_row, cpu_bar) = &w.cpu_use;
    let percent = |fraction: f64| format!("{:.0}", fraction * 100.0);
    let cpu_text = i18n_f(
        "{} % busy: jobs {} %, your programs {} % · load {} · {} % lent",
        &[
            &percent(gauges.cpu.own + gauges.cpu.jobs),
            &percent(gauges.cpu.jobs),
            &percent(gauges.cpu.own),
            &format::decimal(resources.load.one, 2),
            &limits.cpu_percent.to_string(),
        ],
    );
    cpu_bar.set(gauges.cpu, &cpu_text);
    cpu_use_row.set_subtitle(&cpu_text);
    let (ram_use_row, ram_bar) = &w.ram_use;
    let total = resources.memory.total_bytes;
    let used = total.saturating_sub(resources.memory.available_bytes);
    let jobs = resources.jobs.memory_bytes.min(used);
    let ram_text = i18n_f(
        "{} used of {}: jobs {}, your programs {} · {} lent",
        &[
            &format::size(used),
            &format::size(total),
            &format::size(jobs),
            &format::size(used - jobs),
            &format::size(limits.ram_bytes),
        ],
    );
    ram_bar.set(gauges.ram, &ram_text);
    ram_use_row.set_subtitle(&ram_text);

    widgets::clear(&w.gpu_list);
    if resources.gpus.is_empty() {
        w.gpu_list
            .append(&widgets::placeholder(&i18n("No graphics card on this machine")));
    }
    for gpu in &resources.gpus {
        let row = widgets::row(
            &format!("#{} {}", gpu.index, gpu.name),
            &i18n_f(
                "{} % busy · {} used of {}",
                &[
                    &gpu.utilization_percent.to_string(),
                    &format::size(gpu.memory_used_bytes),
                    &format::size(gpu.memory_total_bytes),
                ],
            ),
        );
        let bar = widgets::gauge(&i18n("Graphics card in use"));
        bar.set_value(f64::from(gpu.utilization_percent) / 100.0);
        row.add_suffix(&bar);
        w.gpu_list.append(&row);
    }

    widgets::clear(&w.jobs_list);
    let now = now_ms();
    let mut any = false;
    for job in model.jobs_here() {
        any = true;
        let since = job.started_ms.map_or_else(
            || i18n("not started yet"),
            |start| i18n_f("for {}", &[&format::span(now.saturating_sub(start))]),
        );
        let resources = &job.resources;
        let asked = i18n_f(
            "CPU {} · RAM {} · {} GPU",
            &[
                &if resources.cpu_percent == 0 {
                    i18n("all lent")
                } else {
                    format!("{} %", resources.cpu_percent)
                },
                &if resources.ram_bytes == 0 {
                    i18n("all lent")
                } else {
                    format::size(resources.ram_bytes)
                },
                &resources.gpus.to_string(),
            ],
        );
        let row = widgets::row(
            &format::command_line(&job.argv),
            &i18n_f(
                "{} · from {} · {} · {}",
                &[
                    &format::job_state(job.state),
                    &format::machine(&job.submitter_name, &job.submitter),
                    &since,
                    &asked,
                ],
            ),
        );
        let stop = gtk::Button::with_label(&i18n("Stop"));
        stop.add_css_class("destructive-action");
        stop.set_valign(gtk::Align::Center);
        stop.set_tooltip_text(Some(&i18n(
            "Stop this job: its submitter sees that the owner stopped it",
        )));
        let handle = job.job.clone();
        let sender = sender.clone();
        stop.connect_clicked(move |_| sender.input(SharingMsg::StopJob(handle.clone())));
        row.add_suffix(&stop);
        w.jobs_list.append(&row);
    }
    if !any {
        w.jobs_list
            .append(&widgets::placeholder(&i18n("No job runs on this machine now.")));
    }
}
