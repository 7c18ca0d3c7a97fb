// SPDX-License-Identifier: GPL-3.0-or-later
//! The root component: the window, its pages, the link to the service, and the one funnel
//! that turns every failure into a translated toast.

use relm4::adw::prelude::*;
use relm4::{adw, gtk, Component, ComponentController, ComponentParts, ComponentSender, Controller};

use crate::app_error::{toast_text, Failure};
use crate::daemon_link::{self, LinkEvent, Unavailable};
use crate::i18n::i18n;
use crate::options::{Options, Page};
use crate::pages::guide::GuidePage;
use crate::pages::jobs::{JobsMsg, JobsPage};
use crate::pages::room::{RoomMsg, RoomPage};
use crate::pages::security::{SecurityMsg, SecurityPage};
use crate::pages::sharing::{SharingMsg, SharingPage};
use crate::snapshot;
use crate::tray::{self, Started, TrayEvent, TrayLink};

/// Where the link to the service stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Service {
    /// Not heard from yet.
    Connecting,
    /// On the bus.
    Running,
    /// Not usable, and why.
    Unavailable(Unavailable),
}

/// The app.
pub struct App {
    service: Service,
    sharing: Controller<SharingPage>,
    room: Controller<RoomPage>,
    jobs: Controller<JobsPage>,
    security: Controller<SecurityPage>,
    _guide: Controller<GuidePage>,
    tray: TrayLink,
}

/// What the root is told.
#[derive(Debug)]
pub enum AppMsg {
    /// A request failed: the funnel.
    Failed(Failure),
    /// The tray started, or could not.
    TrayStarted(Started),
    /// Something from the tray's menu or icon.
    Tray(TrayEvent),
}

/// The widgets `update_view` refreshes.
pub struct AppWidgets {
    toasts: adw::ToastOverlay,
    /// Per service page: its content or the "service not running" page.
    service_stacks: Vec<gtk::Stack>,
    down_pages: Vec<adw::StatusPage>,
}

/// The title, text and icon of the page shown while the service cannot be used.
#[must_use]
pub fn service_notice(service: &Service) -> (String, String, &'static str) {
    match service {
        Service::Connecting => (i18n("Connecting to the PartaGPU service…"), String::new(), "content-loading-symbolic"),
        Service::Running => (String::new(), String::new(), ""),
        Service::Unavailable(Unavailable::NotRunning) => (
            i18n("The PartaGPU service is not running"),
            i18n("This machine needs the partagpud service. An administrator installs the partagpu package and starts it with: sudo systemctl enable --now partagpud. This window notices when it starts."),
            "dialog-warning-symbolic",
        ),
        Service::Unavailable(Unavailable::NoBus(_)) => (
            i18n("The system bus cannot be reached"),
            i18n("PartaGPU talks to its service over D-Bus, which is not available here. The app tries again every few seconds."),
            "dialog-error-symbolic",
        ),
    }
}

/// Sends to a page; while the app shuts down a page may already be gone, which is fine.
fn tell<C: Component>(page: &Controller<C>, message: C::Input) {
    let _ = page.sender().send(message);
}

/// Wraps a service page: its content, or a notice while the service cannot be used.
fn service_stack(content: &impl IsA<gtk::Widget>) -> (gtk::Stack, adw::StatusPage) {
    let stack = gtk::Stack::new();
    stack.add_named(content, Some("content"));
    let down = adw::StatusPage::new();
    stack.add_named(&down, Some("down"));
    (stack, down)
}

impl Component for App {
    type Init = Options;
    type Input = AppMsg;
    type Output = ();
    type CommandOutput = LinkEvent;
    type Root = adw::ApplicationWindow;
    type Widgets = AppWidgets;

    fn init_root() -> Self::Root {
        let window = adw::ApplicationWindow::new(&relm4::main_adw_application());
        window.set_title(Some("PartaGPU"));
        window.set_icon_name(Some(crate::config::APP_ID));
        match snapshot::window_size() {
            // A test's fixed size, neither read from nor written to the user's settings.
            Some((width, height)) => window.set_default_size(width, height),
            None => crate::window_state::restore_and_remember(&window, &relm4::main_adw_application()),
        }
        window
    }

    fn init(options: Options, root: Self::Root, sender: ComponentSender<Self>) -> ComponentParts<Self> {
        let sharing = SharingPage::builder()
            .launch(())
            .forward(sender.input_sender(), AppMsg::Failed);
        let room = RoomPage::builder()
            .launch(())
            .forward(sender.input_sender(), AppMsg::Failed);
        let jobs = JobsPage::builder()
            .launch(())
            .forward(sender.input_sender(), AppMsg::Failed);
        let security = SecurityPage::builder().launch(()).detach();
        let guide = GuidePage::builder().launch(()).detach();

        let view_stack = adw::ViewStack::new();
        let mut service_stacks = Vec::new();
        let mut down_pages = Vec::new();
        let service_pages: [(Page, &gtk::Widget, String, &str); 4] = [
            (
                Page::Sharing,
                sharing.widget().upcast_ref(),
                i18n("My sharing"),
                "preferences-system-sharing-symbolic",
            ),
            (
                Page::Room,
                room.widget().upcast_ref(),
                i18n("Room"),
                "network-workgroup-symbolic",
            ),
            (
                Page::Jobs,
                jobs.widget().upcast_ref(),
                i18n("My jobs"),
                "system-run-symbolic",
            ),
            (
                Page::Security,
                security.widget().upcast_ref(),
                i18n("Security"),
                "security-high-symbolic",
            ),
        ];
        for (page, widget, title, icon) in service_pages {
            let (stack, down) = service_stack(widget);
            view_stack
                .add_titled(&stack, Some(page.name()), &title)
                .set_icon_name(Some(icon));
            service_stacks.push(stack);
            down_pages.push(down);
        }
        view_stack
            .add_titled(guide.widget(), Some(Page::Guide.name()), &i18n("Guide"))
            .set_icon_name(Some("help-browser-symbolic"));
        if let Some(page) = options.page {
            view_stack.set_visible_child_name(page.name());
        }

        let header = adw::HeaderBar::new();
        let switcher = adw::ViewSwitcherTitle::new();
        switcher.set_stack(Some(&view_stack));
        switcher.set_title("PartaGPU");
        header.set_title_widget(Some(&switcher));
        let bottom = adw::ViewSwitcherBar::new();
        bottom.set_stack(Some(&view_stack));
        switcher
            .bind_property("title-visible", &bottom, "reveal")
            .sync_create()
            .build();

        let content = gtk::Box::new(gtk::Orientation::Vertical, 0);
        content.append(&header);
        view_stack.set_vexpand(true);
        content.append(&view_stack);
        content.append(&bottom);
        let toasts = adw::ToastOverlay::new();
        toasts.set_child(Some(&content));
        root.set_content(Some(&toasts));

        sender.command(|out, shutdown| shutdown.register(daemon_link::follow(out)).drop_on_shutdown());
        snapshot::schedule_if_asked(&root);
        start_tray(&sender);
        present_on_activate(&root, options.background);

        let model = App {
            service: Service::Connecting,
            sharing,
            room,
            jobs,
            security,
            _guide: guide,
            tray: TrayLink::default(),
        };
        let widgets = AppWidgets {
            toasts,
            service_stacks,
            down_pages,
        };
        widgets.show_service(&model.service);
        ComponentParts { model, widgets }
    }

    fn update_with_view(
        &mut self,
        widgets: &mut AppWidgets,
        message: AppMsg,
        _sender: ComponentSender<Self>,
        root: &Self::Root,
    ) {
        match message {
            AppMsg::TrayStarted(started) => self.tray.started(started),
            AppMsg::Tray(TrayEvent::HostPresent(present)) => self.tray.set_host_present(present),
            AppMsg::Tray(TrayEvent::Open) => root.present(),
            AppMsg::Tray(TrayEvent::Toggle(toggle)) => {
                tell(&self.sharing, SharingMsg::ModeChosen(toggle.target()))
            }
            AppMsg::Tray(TrayEvent::Quit) => relm4::main_adw_application().quit(),
            AppMsg::Failed(failure) => {
                // The one funnel: logged without arguments (they may hold a code), shown
                // translated.
                tracing::warn!(action = %failure.action, error = %failure.error, "request failed");
                let toast = adw::Toast::new(&toast_text(&failure));
                toast.set_timeout(6);
                widgets.toasts.add_toast(toast);
            }
        }
        // With an icon to come back through, closing the window only hides it.
        root.set_hide_on_close(self.tray.host_present());
    }

    fn update_cmd_with_view(
        &mut self,
        widgets: &mut AppWidgets,
        event: LinkEvent,
        _sender: ComponentSender<Self>,
        _root: &Self::Root,
    ) {
        match event {
            LinkEvent::Connected(connected) => {
                self.service = Service::Running;
                self.tray.model_mut().set_service_running(true);
                tell(&self.sharing, SharingMsg::Connection(Some(connected.clone())));
                tell(&self.room, RoomMsg::Connection(Some(connected.clone())));
                tell(&self.jobs, JobsMsg::Connection(Some(connected)));
            }
            LinkEvent::Unavailable(why) => {
                self.service = Service::Unavailable(why);
                self.tray.model_mut().set_service_running(false);
                tell(&self.sharing, SharingMsg::Connection(None));
                tell(&self.room, RoomMsg::Connection(None));
                tell(&self.jobs, JobsMsg::Connection(None));
            }
            LinkEvent::Status(status) => {
                self.tray.model_mut().set_status(&status);
                tell(&self.sharing, SharingMsg::Status(status));
            }
            LinkEvent::Room(info) => tell(&self.room, RoomMsg::Info(info)),
            LinkEvent::Fleet(fleet) => tell(&self.room, RoomMsg::Fleet(fleet)),
            LinkEvent::Jobs(jobs) => {
                self.tray.model_mut().set_jobs(&jobs);
                tell(&self.sharing, SharingMsg::Jobs(jobs.clone()));
                tell(&self.jobs, JobsMsg::Jobs(jobs));
            }
            LinkEvent::Journal(events) => tell(&self.security, SecurityMsg::Journal(events)),
        }
        widgets.show_service(&self.service);
        self.tray.refresh();
    }
}

/// Starts the tray on relm4's runtime; its events come back as [`AppMsg::Tray`].
fn start_tray(sender: &ComponentSender<App>) {
    let input = sender.input_sender().clone();
    let events: tray::TrayEvents = {
        let input = input.clone();
        std::sync::Arc::new(move |event| input.emit(AppMsg::Tray(event)))
    };
    relm4::spawn(async move {
        let started = tray::spawn(tray::TrayModel::default().look(), events).await;
        input.emit(AppMsg::TrayStarted(Started(started)));
    });
}

/// Shows the window on every activation (a launch from the menu, a second `partagpu`), but
/// not on the first with `--background` (the autostart entry: the tray only).
fn present_on_activate(window: &adw::ApplicationWindow, background: bool) {
    let skip = std::cell::Cell::new(background);
    let window = window.clone();
    relm4::main_adw_application().connect_activate(move |_| {
        if !skip.replace(false) {
            window.present();
        }
    });
}

impl AppWidgets {
    /// Shows each service page, or the notice that says why it cannot be used.
    fn show_service(&self, service: &Service) {
        let (title, description, icon) = service_notice(service);
        for (stack, down) in self.service_stacks.iter().zip(&self.down_pages) {
            down.set_title(&title);
            down.set_description(Some(&description));
            down.set_icon_name(Some(icon));
            stack.set_visible_child_name(if *service == Service::Running {
                "content"
            } else {
                "down"
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_unusable_service_says_what_to_do() {
        let (title, text, _) = service_notice(&Service::Unavailable(Unavailable::NotRunning));
        assert!(title.contains("not running") && text.contains("systemctl enable --now partagpud"));
        let (title, _, _) = service_notice(&Service::Unavailable(Unavailable::NoBus("x".into())));
        assert!(title.contains("system bus"));
        assert!(service_notice(&Service::Running).0.is_empty());
    }
}
