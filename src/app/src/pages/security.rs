// SPDX-License-Identifier: GPL-3.0-or-later
//! Security: the service's journal (newest first, from `Security1.EventRecorded`), a
//! severity filter, and what each kind of event means.

mod model;

use partagpu_core::journal::SecurityEvent;
use relm4::adw::prelude::*;
use relm4::{adw, gtk, ComponentParts, ComponentSender, SimpleComponent};

pub use model::{explanation, severity_label, visible, SeverityFilter};

use crate::format;
use crate::i18n::{i18n, i18n_f};
use crate::widgets;

/// Rows shown at most: the journal keeps more, the page shows the newest.
const MAX_ROWS: usize = 200;

/// The page.
pub struct SecurityPage {
    events: Vec<SecurityEvent>,
    filter: SeverityFilter,
}

/// What the page is told.
#[derive(Debug)]
pub enum SecurityMsg {
    /// The newest journal entries, oldest first.
    Journal(Vec<SecurityEvent>),
    /// The filter changed.
    Filter(SeverityFilter),
}

/// The widgets `update_view` refreshes.
pub struct SecurityWidgets {
    list: gtk::ListBox,
}

impl SimpleComponent for SecurityPage {
    type Init = ();
    type Input = SecurityMsg;
    type Output = ();
    type Root = adw::PreferencesPage;
    type Widgets = SecurityWidgets;

    fn init_root() -> Self::Root {
        adw::PreferencesPage::new()
    }

    fn init((): (), root: Self::Root, sender: ComponentSender<Self>) -> ComponentParts<Self> {
        let group = widgets::group(
            &i18n("Security journal"),
            &i18n("What the service saw at the room's door: wrong codes, refused connections, new machines. It never holds a room code or a key."),
        );
        let filter_box = gtk::Box::new(gtk::Orientation::Horizontal, 0);
        filter_box.add_css_class("linked");
        filter_box.set_halign(gtk::Align::Start);
        filter_box.set_margin_bottom(12);
        let mut first: Option<gtk::ToggleButton> = None;
        for (filter, label) in [
            (SeverityFilter::All, i18n("All")),
            (SeverityFilter::Warnings, i18n("Warnings")),
            (SeverityFilter::Critical, i18n("Critical")),
        ] {
            let toggle = gtk::ToggleButton::with_label(&label);
            match &first {
                Some(first) => toggle.set_group(Some(first)),
                None => {
                    toggle.set_active(true);
                    first = Some(toggle.clone());
                }
            }
            let sender = sender.clone();
            toggle.connect_toggled(move |t| {
                if t.is_active() {
                    sender.input(SecurityMsg::Filter(filter));
                }
            });
            filter_box.append(&toggle);
        }
        group.add(&filter_box);
        let list = widgets::boxed_list();
        group.add(&list);
        root.add(&group);
        let model = SecurityPage {
            events: Vec::new(),
            filter: SeverityFilter::All,
        };
        ComponentParts {
            model,
            widgets: SecurityWidgets { list },
        }
    }

    fn update(&mut self, message: SecurityMsg, _sender: ComponentSender<Self>) {
        match message {
            SecurityMsg::Journal(events) => self.events = events,
            SecurityMsg::Filter(filter) => self.filter = filter,
        }
    }

    fn update_view(&self, widgets: &mut SecurityWidgets, _sender: ComponentSender<Self>) {
        let list = &widgets.list;
        widgets::clear(list);
        let now = format::now_ms();
        let shown = visible(&self.events, self.filter);
        for event in shown.iter().take(MAX_ROWS) {
            let row = adw::ExpanderRow::new();
            row.set_title(&event.message);
            row.set_use_markup(false);
            let mut details = vec![
                severity_label(event.severity),
                i18n_f("{} ago", &[&format::span(now.saturating_sub(event.time_unix_ms))]),
            ];
            if !event.source.is_empty() {
                details.push(i18n_f("from {}", &[&event.source]));
            }
            if event.count > 1 {
                details.push(i18n_f("{} times", &[&event.count.to_string()]));
            }
            row.set_subtitle(&details.join(" · "));
            let icon = match event.severity {
                partagpu_core::journal::Severity::Info => "dialog-information-symbolic",
                partagpu_core::journal::Severity::Warning => "dialog-warning-symbolic",
                partagpu_core::journal::Severity::Critical => "dialog-error-symbolic",
            };
            let image = widgets::accessible::icon(icon, &severity_label(event.severity));
            row.add_prefix(&image);
            let explain = widgets::row(&i18n("What it means"), &explanation(&event.kind));
            explain.set_subtitle_lines(0);
            row.add_row(&explain);
            list.append(&row);
        }
        if shown.is_empty() {
            list.append(&widgets::placeholder(&i18n("Nothing to report.")));
        }
    }
}
