// SPDX-License-Identifier: GPL-3.0-or-later
//! My sharing: the on/paused/off control, the three sliders (debounced, sent through
//! `Sharing1.SetLimits`), this machine's use now, and the jobs running here.

pub(crate) mod model;

use std::time::Duration;

use partagpu_core::job::record::JobRecord;
use partagpu_core::status::MachineStatus;
use partagpu_core::SharingState;
use relm4::adw::prelude::*;
use relm4::{adw, gtk, ComponentParts, ComponentSender};

pub use model::{is_running_here, ModeStep, SharingModel, Slider};

use crate::app_error::{AppError, Failure};
use crate::daemon_link::Connected;
use crate::i18n::i18n;
use crate::widgets;

/// How long a slider must rest before its value is sent: one request per gesture, not one
/// per pixel, and still "live" to the owner.
const DEBOUNCE: Duration = Duration::from_millis(300);

/// The page.
pub struct SharingPage {
    model: SharingModel,
    client: Option<Connected>,
}

/// What the page is told.
#[derive(Debug)]
pub enum SharingMsg {
    /// The service came or went.
    Connection(Option<Connected>),
    /// A new status.
    Status(Box<MachineStatus>),
    /// Every job known here.
    Jobs(Vec<JobRecord>),
    /// The owner picked a mode.
    ModeChosen(SharingState),
    /// A slider moved.
    SliderMoved(Slider, f64),
    /// The owner stops a job running here.
    StopJob(String),
}

/// Results of the page's requests.
#[derive(Debug)]
pub enum SharingCommand {
    /// A debounce timer of this generation fired.
    Debounced(u64),
    /// A request ended; `Err` goes to the funnel.
    Finished(Result<(), Failure>, bool),
}

/// The widgets `update_view` refreshes.
pub struct SharingWidgets {
    group_machine: adw::PreferencesGroup,
    mode_row: adw::ActionRow,
    mode_buttons: Vec<(SharingState, gtk::ToggleButton)>,
    cpu: (adw::ActionRow, gtk::Scale),
    ram: (adw::ActionRow, gtk::Scale),
    gpu: (adw::ActionRow, gtk::Scale),
    cpu_use: (adw::ActionRow, widgets::UsageBar),
    ram_use: (adw::ActionRow, widgets::UsageBar),
    gpu_list: gtk::ListBox,
    jobs_list: gtk::ListBox,
}

fn slider_row(
    title: &str,
    accessible: &str,
    slider: Slider,
    sender: &ComponentSender<SharingPage>,
) -> (adw::ActionRow, gtk::Scale) {
    let row = widgets::row(title, "");
    let scale = widgets::accessible::slider(accessible, 0.0, 100.0, 1.0);
    scale.set_width_request(260);
    scale.set_draw_value(false);
    scale.set_valign(gtk::Align::Center);
    scale.set_tooltip_text(Some(accessible));
    let sender = sender.clone();
    scale.connect_value_changed(move |scale| sender.input(SharingMsg::SliderMoved(slider, scale.value())));
    row.add_suffix(&scale);
    (row, scale)
}

fn gauge_row(title: &str, accessible: &str) -> (adw::ActionRow, widgets::UsageBar) {
    let row = widgets::row(title, "");
    let bar = widgets::UsageBar::new(accessible);
    row.add_suffix(bar.widget());
    (row, bar)
}

impl relm4::Component for SharingPage {
    type Init = ();
    type Input = SharingMsg;
    type Output = Failure;
    type CommandOutput = SharingCommand;
    type Root = adw::PreferencesPage;
    type Widgets = SharingWidgets;

    fn init_root() -> Self::Root {
        adw::PreferencesPage::new()
    }

    fn init((): (), root: Self::Root, sender: ComponentSender<Self>) -> ComponentParts<Self> {
        let group_machine = widgets::group("", "");
        let mode_row = widgets::row(&i18n("Lending"), "");
        let mode_box = gtk::Box::new(gtk::Orientation::Horizontal, 0);
        mode_box.add_css_class("linked");
        mode_box.set_valign(gtk::Align::Center);
        let mut mode_buttons = Vec::new();
        for (state, label) in [
            (SharingState::Sharing, i18n("On")),
            (SharingState::Paused, i18n("Paused")),
            (SharingState::Off, i18n("Off")),
        ] {
            let button = gtk::ToggleButton::with_label(&label);
            if let Some((_, first)) = mode_buttons.first() {
                button.set_group(Some(first));
            }
            let sender = sender.clone();
            // "clicked" is the owner's gesture; "toggled" also fires when the page shows
            // the service's state.
            button.connect_clicked(move |_| sender.input(SharingMsg::ModeChosen(state)));
            mode_box.append(&button);
            mode_buttons.push((state, button));
        }
        mode_row.add_suffix(&mode_box);
        group_machine.add(&mode_row);
        root.add(&group_machine);

        let lends = widgets::group(
            &i18n("What this machine lends"),
            &i18n(
                "Jobs from the room never get more than this. Changes apply at once, also to running jobs.",
            ),
        );
        let cpu = slider_row(
            &i18n("Processor"),
            &i18n("Processor share lent"),
            Slider::Cpu,
            &sender,
        );
        let ram = slider_row(&i18n("Memory"), &i18n("Memory lent"), Slider::Ram, &sender);
        let gpu = slider_row(
            &i18n("Graphics cards"),
            &i18n("Share of each graphics card lent"),
            Slider::Gpu,
            &sender,
        );
        for (row, _) in [&cpu, &ram, &gpu] {
            lends.add(row);
        }
        root.add(&lends);

        let usage = widgets::group(
            &i18n("Use of this machine now"),
            &i18n("Everything that runs here: your own programs and the jobs of the room."),
        );
        let cpu_use = gauge_row(&i18n("Processor"), &i18n("Processor in use"));
        let ram_use = gauge_row(&i18n("Memory"), &i18n("Memory in use"));
        usage.add(&cpu_use.0);
        usage.add(&ram_use.0);
        let gpu_list = widgets::boxed_list();
        gpu_list.set_margin_top(12);
        usage.add(&gpu_list);
        root.add(&usage);

        let jobs = widgets::group(&i18n("Jobs running here"), "");
        let jobs_list = widgets::boxed_list();
        jobs.add(&jobs_list);
        root.add(&jobs);

        let model = SharingPage {
            model: SharingModel::default(),
            client: None,
        };
        let widgets = SharingWidgets {
            group_machine,
            mode_row,
            mode_buttons,
            cpu,
            ram,
            gpu,
            cpu_use,
            ram_use,
            gpu_list,
            jobs_list,
        };
        ComponentParts { model, widgets }
    }

    fn update(&mut self, message: SharingMsg, sender: ComponentSender<Self>, _root: &Self::Root) {
        match message {
            SharingMsg::Connection(client) => self.client = client,
            SharingMsg::Status(status) => self.model.set_status(*status),
            SharingMsg::Jobs(jobs) => self.model.set_jobs(jobs),
            SharingMsg::SliderMoved(slider, value) => {
                if let Some(generation) = self.model.slider_moved(slider, value) {
                    sender.oneshot_command(async move {
                        tokio::time::sleep(DEBOUNCE).await;
                        SharingCommand::Debounced(generation)
                    });
                }
            }
            SharingMsg::ModeChosen(target) => {
                let steps = self.model.steps_to(target);
                self.request(
                    &sender,
                    i18n("Could not change sharing"),
                    false,
                    move |client| async move {
                        for step in steps {
                            match step {
                                ModeStep::SetEnabled(on) => client.set_sharing(on).await?,
                                ModeStep::SetPaused(paused) => client.set_paused(paused).await?,
                            }
                        }
                        Ok(())
                    },
                );
            }
            SharingMsg::StopJob(job) => {
                self.request(
                    &sender,
                    i18n("Could not stop the job"),
                    false,
                    move |client| async move { client.jobs().cancel(&job).await },
                );
            }
        }
    }

    fn update_cmd(&mut self, message: SharingCommand, sender: ComponentSender<Self>, _root: &Self::Root) {
        match message {
            SharingCommand::Debounced(generation) => {
                if let Some(update) = self.model.debounce_elapsed(generation) {
                    self.request(
                        &sender,
                        i18n("Could not change the limits"),
                        true,
                        move |client| async move { client.set_limits(update).await },
                    );
                }
            }
            SharingCommand::Finished(Ok(()), _) => {}
            SharingCommand::Finished(Err(failure), limits) => {
                if limits {
                    self.model.change_refused();
                }
                let _ = sender.output(failure);
            }
        }
    }

    fn update_view(&self, widgets: &mut SharingWidgets, sender: ComponentSender<Self>) {
        view::refresh(&self.model, widgets, &sender);
    }
}

impl SharingPage {
    /// Runs one request against the service; a failure goes out to the funnel.
    fn request<F, Fut>(&self, sender: &ComponentSender<Self>, action: String, limits: bool, call: F)
    where
        F: FnOnce(partagpu_client::Client) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = Result<(), partagpu_client::ClientError>> + Send,
    {
        let Some(Connected(client)) = self.client.clone() else {
            let _ = sender.output(Failure::new(action, AppError::NotConnected));
            return;
        };
        sender.oneshot_command(async move {
            let result = call(client).await.map_err(|e| Failure::new(action, e));
            SharingCommand::Finished(result, limits)
        });
    }
}

mod view;
