// SPDX-License-Identifier: GPL-3.0-or-later
//! My jobs: the jobs submitted from here, their state and machines, the open job's live
//! log, cancel, and the artifacts folder.
//!
//! The job list follows `Jobs1.JobChanged`. The log is read with `Jobs1.Logs` from the
//! last offset: the contract signals no output, so the open job's log is read again after
//! a short pause while it runs, and not at all once it ended.

pub(crate) mod model;
mod training_rows;

use std::path::PathBuf;
use std::time::Duration;

use partagpu_client::LogChunk;
use partagpu_core::job::record::JobRecord;
use relm4::adw::prelude::*;
use relm4::{adw, gtk, ComponentParts, ComponentSender};

pub use model::{artifacts_dir, can_cancel, JobsModel, NextRead};

use crate::app_error::{AppError, Failure};
use crate::daemon_link::Connected;
use crate::format;
use crate::i18n::{i18n, i18n_f};
use crate::widgets;
use training_rows::TrainingRows;

/// Most bytes asked for at once.
const LOG_CHUNK: u32 = 64 << 10;
/// Pause between reads of a running job's log when nothing came.
const LOG_PAUSE: Duration = Duration::from_millis(500);

/// The page.
pub struct JobsPage {
    model: JobsModel,
    client: Option<Connected>,
}

/// What the page is told.
#[derive(Debug)]
pub enum JobsMsg {
    /// The service came or went.
    Connection(Option<Connected>),
    /// Every job known here.
    Jobs(Vec<JobRecord>),
    /// Open a job (its handle).
    Open(Option<String>),
    /// Cancel the open job.
    Cancel,
    /// Save the open job's artifacts and open their folder.
    OpenArtifacts,
}

/// Results of the page's requests.
#[derive(Debug)]
pub enum JobsCommand {
    /// A log chunk of the job opened at this generation.
    Log(u64, Result<LogChunk, Failure>),
    /// Read the log again (after a pause).
    ReadAgain(u64),
    /// The artifacts were saved there.
    Saved(Result<PathBuf, Failure>),
    /// Cancel ended.
    Cancelled(Result<(), Failure>),
}

/// The widgets `update_view` refreshes.
pub struct JobsWidgets {
    list: gtk::ListBox,
    detail: adw::PreferencesGroup,
    state_row: adw::ActionRow,
    machines_row: adw::ActionRow,
    training: TrainingRows,
    cancel: gtk::Button,
    artifacts: gtk::Button,
    log: gtk::TextView,
    shown_generation: std::cell::Cell<u64>,
    /// Set while the page itself selects a row.
    programmatic: std::rc::Rc<std::cell::Cell<bool>>,
    shown_len: std::cell::Cell<usize>,
}

impl JobsPage {
    fn read_log(&self, sender: &ComponentSender<Self>) {
        let (Some(Connected(client)), Some((job, offset, generation))) =
            (self.client.clone(), self.model.read_position())
        else {
            return;
        };
        sender.oneshot_command(async move {
            let result = client.jobs().logs(&job, offset, LOG_CHUNK).await;
            JobsCommand::Log(
                generation,
                result.map_err(|e| Failure::new(i18n("Could not read the job's output"), e)),
            )
        });
    }
}

impl relm4::Component for JobsPage {
    type Init = ();
    type Input = JobsMsg;
    type Output = Failure;
    type CommandOutput = JobsCommand;
    type Root = adw::PreferencesPage;
    type Widgets = JobsWidgets;

    fn init_root() -> Self::Root {
        adw::PreferencesPage::new()
    }

    fn init((): (), root: Self::Root, sender: ComponentSender<Self>) -> ComponentParts<Self> {
        let group = widgets::group(
            &i18n("Jobs submitted from this machine"),
            &i18n("From a notebook: partagpu.distribute(\"train.py\", nodes=3). From a terminal: partagpuctl run."),
        );
        let list = widgets::boxed_list();
        list.set_selection_mode(gtk::SelectionMode::Single);
        let sender_select = sender.clone();
        let programmatic = std::rc::Rc::new(std::cell::Cell::new(false));
        let guard = programmatic.clone();
        list.connect_row_selected(move |_, row| {
            // The page selecting the open job again after a rebuild is not the user's choice.
            if guard.get() {
                return;
            }
            // Only a row names a job; `None` comes from rebuilding the list, not from the user.
            let handle = row
                .map(|row| row.widget_name().to_string())
                .filter(|name| !name.is_empty());
            if handle.is_some() {
                sender_select.input(JobsMsg::Open(handle));
            }
        });
        group.add(&list);
        root.add(&group);

        let detail = widgets::group("", "");
        let state_row = widgets::row(&i18n("State"), "");
        let machines_row = widgets::row(&i18n("Machines"), "");
        let cancel = gtk::Button::with_label(&i18n("Cancel"));
        cancel.add_css_class("destructive-action");
        cancel.set_valign(gtk::Align::Center);
        let sender_cancel = sender.clone();
        cancel.connect_clicked(move |_| sender_cancel.input(JobsMsg::Cancel));
        state_row.add_suffix(&cancel);
        let artifacts = gtk::Button::with_label(&i18n("Open the artifacts folder"));
        artifacts.set_valign(gtk::Align::Center);
        let sender_artifacts = sender.clone();
        artifacts.connect_clicked(move |_| sender_artifacts.input(JobsMsg::OpenArtifacts));
        machines_row.add_suffix(&artifacts);
        detail.add(&state_row);
        detail.add(&machines_row);
        let training = TrainingRows::new(&detail);
        let log: gtk::TextView = widgets::accessible::labelled(&i18n("Output of the job"));
        log.set_editable(false);
        log.set_monospace(true);
        log.set_left_margin(12);
        log.set_right_margin(12);
        log.set_top_margin(12);
        log.set_bottom_margin(12);
        log.set_wrap_mode(gtk::WrapMode::WordChar);
        log.set_tooltip_text(Some(&i18n("Output of the job")));
        let scroll = gtk::ScrolledWindow::new();
        scroll.set_min_content_height(280);
        scroll.set_child(Some(&log));
        scroll.set_margin_top(12);
        scroll.add_css_class("card");
        detail.add(&scroll);
        root.add(&detail);

        let widgets = JobsWidgets {
            list,
            detail,
            state_row,
            machines_row,
            training,
            cancel,
            artifacts,
            log,
            shown_generation: std::cell::Cell::new(u64::MAX),
            programmatic,
            shown_len: std::cell::Cell::new(0),
        };
        let model = JobsPage {
            model: JobsModel::default(),
            client: None,
        };
        ComponentParts { model, widgets }
    }

    fn update(&mut self, message: JobsMsg, sender: ComponentSender<Self>, _root: &Self::Root) {
        match message {
            JobsMsg::Connection(client) => self.client = client,
            JobsMsg::Jobs(jobs) => {
                let was_open = self.model.selected().map(|job| job.job.clone());
                self.model.set_jobs(jobs);
                // The newest job opens by itself the first time, so its output is in view.
                if was_open.is_none() {
                    if let Some(newest) = self.model.mine().first().map(|job| job.job.clone()) {
                        self.model.select(Some(newest));
                        self.read_log(&sender);
                    }
                }
            }
            JobsMsg::Open(handle) => {
                if handle.as_ref() != self.model.selected().map(|job| &job.job) {
                    self.model.select(handle);
                    self.read_log(&sender);
                }
            }
            JobsMsg::Cancel => {
                let action = i18n("Could not cancel the job");
                let (Some(Connected(client)), Some(job)) =
                    (self.client.clone(), self.model.selected().map(|j| j.job.clone()))
                else {
                    let _ = sender.output(Failure::new(action, AppError::NotConnected));
                    return;
                };
                sender.oneshot_command(async move {
                    JobsCommand::Cancelled(
                        client
                            .jobs()
                            .cancel(&job)
                            .await
                            .map_err(|e| Failure::new(action, e)),
                    )
                });
            }
            JobsMsg::OpenArtifacts => {
                let action = i18n("Could not save the artifacts");
                let (Some(Connected(client)), Some(record)) =
                    (self.client.clone(), self.model.selected().cloned())
                else {
                    let _ = sender.output(Failure::new(action, AppError::NotConnected));
                    return;
                };
                let downloads =
                    relm4::gtk::glib::user_special_dir(relm4::gtk::glib::UserDirectory::Downloads)
                        .unwrap_or_else(relm4::gtk::glib::home_dir);
                let folder = artifacts_dir(&downloads, &record);
                sender.oneshot_command(async move {
                    let result = save_all(&client, &record, folder)
                        .await
                        .map_err(|e| Failure::new(action, e));
                    JobsCommand::Saved(result)
                });
            }
        }
    }

    fn update_cmd(&mut self, message: JobsCommand, sender: ComponentSender<Self>, _root: &Self::Root) {
        match message {
            JobsCommand::Log(generation, Ok(chunk)) => match self.model.log_arrived(generation, &chunk) {
                NextRead::Now => self.read_log(&sender),
                NextRead::Later => sender.oneshot_command(async move {
                    tokio::time::sleep(LOG_PAUSE).await;
                    JobsCommand::ReadAgain(generation)
                }),
                NextRead::Done | NextRead::Stale => {}
            },
            JobsCommand::ReadAgain(generation) => {
                if generation == self.model.generation() {
                    self.read_log(&sender);
                }
            }
            JobsCommand::Saved(Ok(folder)) => {
                let uri = relm4::gtk::gio::File::for_path(&folder).uri();
                if let Err(error) = relm4::gtk::gio::AppInfo::launch_default_for_uri(
                    &uri,
                    None::<&relm4::gtk::gio::AppLaunchContext>,
                ) {
                    let text = i18n_f(
                        "the files are in {} ({})",
                        &[&folder.display().to_string(), &error.to_string()],
                    );
                    let _ = sender.output(Failure::new(
                        i18n("Could not open the folder"),
                        AppError::Local(text),
                    ));
                }
            }
            JobsCommand::Log(_, Err(failure))
            | JobsCommand::Saved(Err(failure))
            | JobsCommand::Cancelled(Err(failure)) => {
                let _ = sender.output(failure);
            }
            JobsCommand::Cancelled(Ok(())) => {}
        }
    }

    fn update_view(&self, widgets: &mut JobsWidgets, _sender: ComponentSender<Self>) {
        refresh(&self.model, widgets);
    }
}

async fn save_all(
    client: &partagpu_client::Client,
    record: &JobRecord,
    folder: PathBuf,
) -> Result<PathBuf, AppError> {
    std::fs::create_dir_all(&folder).map_err(|e| AppError::Local(format!("{}: {e}", folder.display())))?;
    for artifact in &record.artifacts {
        client
            .jobs()
            .save_artifact(&record.job, artifact, &folder)
            .await?;
    }
    Ok(folder)
}

fn refresh(model: &JobsModel, w: &JobsWidgets) {
    let selected = model.selected().map(|job| job.job.clone());
    let now = format::now_ms();
    w.programmatic.set(true);
    widgets::clear(&w.list);
    for job in model.mine() {
        let age = format::span(now.saturating_sub(job.created_ms));
        let row = widgets::row(
            &format::command_line(&job.argv),
            &i18n_f(
                "{} · {} · {} ago · job {}",
                &[
                    &format::job_state(job.state),
                    &format::job_machines(job),
                    &age,
                    format::short_id(&job.id),
                ],
            ),
        );
        let list_row = gtk::ListBoxRow::new();
        list_row.set_widget_name(&job.job);
        list_row.set_child(Some(&row));
        w.list.append(&list_row);
        if Some(&job.job) == selected.as_ref() {
            w.list.select_row(Some(&list_row));
        }
    }
    if model.mine().is_empty() {
        w.list.append(&widgets::placeholder(&i18n(
            "No job submitted from this machine yet.",
        )));
    }

    let Some(job) = model.selected() else {
        w.detail.set_visible(false);
        return;
    };
    w.detail.set_visible(true);
    w.detail
        .set_title(&i18n_f("Job {}", &[format::short_id(&job.id)]));
    let state = match &job.reason {
        Some(reason) => i18n_f("{}: {}", &[&format::job_state(job.state), reason]),
        None => format::job_state(job.state),
    };
    w.state_row.set_subtitle(&state);
    w.cancel.set_visible(can_cancel(job));
    let machines = model::machines_text(job).unwrap_or_else(|| format::job_machines(job));
    w.machines_row.set_subtitle(&machines);
    w.training.show(job);
    w.artifacts.set_sensitive(!job.artifacts.is_empty());
    let buffer = w.log.buffer();
    if w.shown_generation.get() != model.generation() || w.shown_len.get() > model.log().len() {
        buffer.set_text(model.log());
    } else if let Some(new) = model.log().get(w.shown_len.get()..) {
        buffer.insert(&mut buffer.end_iter(), new);
    }
    w.shown_generation.set(model.generation());
    w.shown_len.set(model.log().len());
}
