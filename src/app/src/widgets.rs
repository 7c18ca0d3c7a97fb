// SPDX-License-Identifier: GPL-3.0-or-later
//! Small widget helpers the pages share (lists rebuilt from snapshots, rows, gauges).

pub mod accessible;
mod usage_bar;

pub use usage_bar::{UsageBar, UsageParts};

use relm4::adw::prelude::*;
use relm4::{adw, gtk};

/// A list in libadwaita's "boxed list" style.
#[must_use]
pub fn boxed_list() -> gtk::ListBox {
    let list = gtk::ListBox::new();
    list.set_selection_mode(gtk::SelectionMode::None);
    list.add_css_class("boxed-list");
    list
}

/// Removes every row: lists are rebuilt from each snapshot (a few dozen rows at most).
pub fn clear(list: &gtk::ListBox) {
    while let Some(child) = list.first_child() {
        list.remove(&child);
    }
}

/// A row with a title and a subtitle; markup is off so names from the network stay text.
#[must_use]
pub fn row(title: &str, subtitle: &str) -> adw::ActionRow {
    let row = adw::ActionRow::new();
    row.set_use_markup(false);
    row.set_title(title);
    row.set_subtitle(subtitle);
    row
}

/// A dimmed row that says a list is empty, and why.
#[must_use]
pub fn placeholder(text: &str) -> adw::ActionRow {
    let row = row(text, "");
    row.add_css_class("dim-label");
    row
}

/// A gauge from 0 to 1 named `accessible_name`; its tooltip can say the value in words.
#[must_use]
pub fn gauge(accessible_name: &str) -> gtk::LevelBar {
    let bar: gtk::LevelBar = accessible::labelled(accessible_name);
    bar.set_min_value(0.0);
    bar.set_max_value(1.0);
    bar.set_width_request(180);
    bar.set_valign(gtk::Align::Center);
    // The default offsets colour a "full" bar as a warning; a busy machine is not one.
    bar.remove_offset_value(Some("low"));
    bar.remove_offset_value(Some("high"));
    bar.remove_offset_value(Some("full"));
    bar.set_tooltip_text(Some(accessible_name));
    bar
}

/// A label that wraps, for explanations. Not selectable: GTK puts every selectable label in
/// the Tab chain, and a page of prose would then take dozens of Tab presses to cross.
#[must_use]
pub fn paragraph(text: &str) -> gtk::Label {
    let label = gtk::Label::new(Some(text));
    label.set_wrap(true);
    label.set_xalign(0.0);
    label
}

/// A preferences group with a title and an optional description.
#[must_use]
pub fn group(title: &str, description: &str) -> adw::PreferencesGroup {
    let group = adw::PreferencesGroup::new();
    group.set_title(title);
    if !description.is_empty() {
        group.set_description(Some(description));
    }
    group
}
