// SPDX-License-Identifier: GPL-3.0-or-later
//! The Room page's widgets: built once, refreshed from the page's state.

use partagpu_core::room::Language;
use relm4::adw::prelude::*;
use relm4::{adw, gtk, ComponentSender};

use super::code_entry::{word_state, WordState};
use super::word_entries::{word_entry, word_store};
use super::{members, RoomMsg, RoomPage, ENTRIES};
use crate::format::now_ms;
use crate::i18n::{i18n, i18n_f, ni18n_f};
use crate::widgets;

/// The widgets `refresh` updates.
pub struct RoomWidgets {
    room_group: adw::PreferencesGroup,
    label_row: adw::ActionRow,
    code_row: adw::ActionRow,
    reveal: gtk::Button,
    hide: gtk::Button,
    copy: gtk::Button,
    fingerprint_row: adw::ActionRow,
    create_group: adw::PreferencesGroup,
    create: gtk::Button,
    join_group: adw::PreferencesGroup,
    entries: Vec<gtk::Entry>,
    hint: gtk::Label,
    search: gtk::Button,
    visible_list: gtk::ListBox,
    join: gtk::Button,
    members_group: adw::PreferencesGroup,
    members_list: gtk::ListBox,
    others_list: gtk::ListBox,
    /// Set while the page itself ticks the chosen room (not the user's choice).
    programmatic: std::rc::Rc<std::cell::Cell<bool>>,
}

fn button(label: &str, sender: &ComponentSender<RoomPage>, message: fn() -> RoomMsg) -> gtk::Button {
    let button = gtk::Button::with_label(label);
    button.set_valign(gtk::Align::Center);
    let sender = sender.clone();
    button.connect_clicked(move |_| sender.input(message()));
    button
}

impl RoomWidgets {
    pub(super) fn build(
        root: &adw::PreferencesPage,
        sender: &ComponentSender<RoomPage>,
        language: Language,
    ) -> Self {
        let room_group = widgets::group(&i18n("This room"), "");
        let label_row = widgets::row("", "");
        let code_row = widgets::row(&i18n("Room code"), "");
        let reveal = button(&i18n("Reveal"), sender, || RoomMsg::Reveal);
        reveal.set_tooltip_text(Some(&i18n(
            "Show the four words (an administrator's password is asked)",
        )));
        let hide = button(&i18n("Hide"), sender, || RoomMsg::Hide);
        let copy = widgets::accessible::icon_button("edit-copy-symbolic", &i18n("Copy the code"));
        copy.set_valign(gtk::Align::Center);
        let row_for_copy = code_row.clone();
        copy.connect_clicked(move |button| {
            button
                .clipboard()
                .set_text(&row_for_copy.subtitle().unwrap_or_default())
        });
        for b in [&reveal, &hide, &copy] {
            code_row.add_suffix(b);
        }
        let fingerprint_row = widgets::row(&i18n("This machine's fingerprint"), "");
        let leave_row = widgets::row(
            &i18n("Leave this room"),
            &i18n("This machine stops lending to the room and forgets its code."),
        );
        let leave = button(&i18n("Leave"), sender, || RoomMsg::Leave);
        leave.add_css_class("destructive-action");
        leave_row.add_suffix(&leave);
        for row in [&label_row, &code_row, &fingerprint_row, &leave_row] {
            room_group.add(row);
        }
        root.add(&room_group);

        let create_group = widgets::group(
            &i18n("Create a room"),
            &i18n("For the first machine of a lab: the others join with the four words shown here."),
        );
        let label_entry = adw::EntryRow::new();
        label_entry.set_title(&i18n("Name of the room, e.g. Salle B12"));
        create_group.add(&label_entry);
        let language_row = widgets::row(&i18n("Words of the code"), "");
        let language_box = gtk::Box::new(gtk::Orientation::Horizontal, 0);
        language_box.add_css_class("linked");
        language_box.set_valign(gtk::Align::Center);
        let english = gtk::ToggleButton::with_label(&i18n("English"));
        let french = gtk::ToggleButton::with_label(&i18n("French"));
        french.set_group(Some(&english));
        english.set_active(language == Language::English);
        french.set_active(language == Language::French);
        for (toggle, lang) in [(&english, Language::English), (&french, Language::French)] {
            let sender = sender.clone();
            toggle.connect_toggled(move |t| {
                if t.is_active() {
                    sender.input(RoomMsg::Language(lang));
                }
            });
            language_box.append(toggle);
        }
        language_row.add_suffix(&language_box);
        create_group.add(&language_row);
        let create = gtk::Button::with_label(&i18n("Create the room"));
        create.add_css_class("suggested-action");
        create.set_halign(gtk::Align::End);
        create.set_margin_top(12);
        let sender_create = sender.clone();
        create.connect_clicked(move |_| sender_create.input(RoomMsg::Create(label_entry.text().to_string())));
        create_group.add(&create);
        root.add(&create_group);

        let join_group = widgets::group(
            &i18n("Join a room"),
            &i18n("Type the four words shown on a machine of the room. Each word is checked as you type."),
        );
        let store = word_store();
        let entries: Vec<gtk::Entry> = (0..ENTRIES).map(|i| word_entry(i, &store, sender)).collect();
        let entry_box = gtk::Box::new(gtk::Orientation::Horizontal, 6);
        for entry in &entries {
            entry_box.append(entry);
        }
        join_group.add(&entry_box);
        let hint = widgets::paragraph("");
        hint.add_css_class("dim-label");
        hint.set_margin_top(6);
        join_group.add(&hint);
        let search_row = gtk::Box::new(gtk::Orientation::Horizontal, 6);
        search_row.set_margin_top(12);
        let search = button(&i18n("Look for rooms"), sender, || RoomMsg::Search);
        let join = button(&i18n("Join"), sender, || RoomMsg::Join);
        join.add_css_class("suggested-action");
        join.set_hexpand(true);
        join.set_halign(gtk::Align::End);
        search_row.append(&search);
        search_row.append(&join);
        join_group.add(&search_row);
        let visible_list = widgets::boxed_list();
        visible_list.set_margin_top(12);
        join_group.add(&visible_list);
        root.add(&join_group);

        let members_group = widgets::group(&i18n("Machines in the room"), "");
        let members_list = widgets::boxed_list();
        members_group.add(&members_list);
        root.add(&members_group);
        let others_group = widgets::group(&i18n("Other rooms on this network"), "");
        let others_list = widgets::boxed_list();
        others_group.add(&others_list);
        root.add(&others_group);

        RoomWidgets {
            room_group,
            label_row,
            code_row,
            reveal,
            hide,
            copy,
            fingerprint_row,
            create_group,
            create,
            join_group,
            entries,
            hint,
            search,
            visible_list,
            join,
            members_group,
            members_list,
            others_list,
            programmatic: std::rc::Rc::default(),
        }
    }

    pub(super) fn refresh(&self, page: &RoomPage, sender: &ComponentSender<RoomPage>) {
        let joined = page.joined();
        self.room_group.set_visible(joined);
        self.members_group.set_visible(joined);
        self.create_group.set_visible(!joined);
        self.join_group.set_visible(!joined);
        self.create.set_sensitive(!page.busy);
        self.join.set_sensitive(!page.busy);
        self.search.set_sensitive(!page.searching);
        self.search.set_label(&if page.searching {
            i18n("Looking…")
        } else {
            i18n("Look for rooms")
        });
        if let Some(info) = &page.info {
            let label = if info.label.is_empty() {
                i18n("Room without a name")
            } else {
                info.label.clone()
            };
            self.label_row.set_title(&label);
            self.label_row.set_subtitle(&i18n_f(
                "Room {} · code version {}",
                &[
                    info.room_id.get(..8).unwrap_or(&info.room_id),
                    &info.epoch.to_string(),
                ],
            ));
            self.fingerprint_row.set_subtitle(&info.fingerprint);
        }
        self.refresh_code(page);
        self.refresh_entries(page);
        self.refresh_visible(page, sender);
        self.refresh_members(page);
    }

    fn refresh_code(&self, page: &RoomPage) {
        let shown = page.shown_code.as_ref();
        self.reveal.set_visible(shown.is_none());
        self.hide.set_visible(shown.is_some());
        self.copy.set_visible(shown.is_some());
        match shown {
            Some(code) => {
                self.code_row.set_subtitle(code);
                self.code_row
                    .set_title(&i18n("Room code: give these four words to the others"));
            }
            None => {
                self.code_row.set_subtitle(&i18n(
                    "Hidden. It is shown once when the room is created, then only on demand.",
                ));
                self.code_row.set_title(&i18n("Room code"));
            }
        }
    }

    fn refresh_entries(&self, page: &RoomPage) {
        let mut hint = None;
        for (index, entry) in self.entries.iter().enumerate() {
            let word = page.draft.word(index);
            if page.entries_stale && entry.text() != word {
                entry.set_text(word);
            }
            let state = word_state(word);
            let (icon, error) = match &state {
                WordState::Valid => (Some("emblem-ok-symbolic"), false),
                WordState::Unknown => (Some("dialog-warning-symbolic"), true),
                WordState::Empty | WordState::Incomplete(_) => (None, false),
            };
            entry.set_icon_from_icon_name(gtk::EntryIconPosition::Secondary, icon);
            if error {
                entry.add_css_class("error");
            } else {
                entry.remove_css_class("error");
            }
            let position = (index + 1).to_string();
            if hint.is_none() {
                hint = match state {
                    WordState::Incomplete(found) => {
                        Some(i18n_f("Word {}: {}…", &[&position, &found.join(", ")]))
                    }
                    WordState::Unknown => Some(i18n_f(
                        "Word {} is in no word list: check its spelling.",
                        &[&position],
                    )),
                    _ => None,
                };
            }
        }
        let all_typed = (0..ENTRIES).all(|i| !page.draft.word(i).is_empty());
        let hint = hint.unwrap_or_else(|| match (all_typed, page.draft.code()) {
            (false, _) => i18n("Pasting the whole code into the first box fills the four boxes."),
            (true, Ok(_)) => i18n("The four words form a valid code."),
            (true, Err(sentence)) => sentence,
        });
        self.hint.set_text(&hint);
    }

    fn refresh_visible(&self, page: &RoomPage, sender: &ComponentSender<RoomPage>) {
        widgets::clear(&self.visible_list);
        self.visible_list.set_visible(!page.visible.is_empty());
        let mut first: Option<gtk::CheckButton> = None;
        for room in &page.visible {
            let label = if room.label.is_empty() {
                i18n("Room without a name")
            } else {
                room.label.clone()
            };
            let count = u32::try_from(room.members.len()).unwrap_or(u32::MAX);
            let row = widgets::row(
                &label,
                &ni18n_f("{} machine", "{} machines", count, &[&count.to_string()]),
            );
            let check: gtk::CheckButton = widgets::accessible::labelled(&label);
            check.set_tooltip_text(Some(&label));
            if let Some(first) = &first {
                check.set_group(Some(first));
            } else {
                first = Some(check.clone());
            }
            let id = room.room_id.clone();
            let sender = sender.clone();
            let guard = self.programmatic.clone();
            check.connect_toggled(move |c| {
                if c.is_active() && !guard.get() {
                    sender.input(RoomMsg::Choose(Some(id.clone())));
                }
            });
            self.programmatic.set(true);
            check.set_active(page.chosen_room.as_deref() == Some(room.room_id.as_str()));
            self.programmatic.set(false);
            row.add_prefix(&check);
            row.set_activatable_widget(Some(&check));
            self.visible_list.append(&row);
        }
    }

    fn refresh_members(&self, page: &RoomPage) {
        widgets::clear(&self.members_list);
        let now = now_ms();
        for peer in &page.fleet.members {
            let text = members::describe(peer, now);
            let row = widgets::row(
                &text.title,
                &format!("{}\n{}\n{}", text.state, text.lends, text.identity),
            );
            row.set_subtitle_lines(0);
            let bar = widgets::gauge(&i18n_f("Processor load of {}", &[&text.title]));
            bar.set_value(members::cpu_load(peer));
            bar.set_tooltip_text(Some(&i18n("Processor in use")));
            row.add_suffix(&bar);
            self.members_list.append(&row);
        }
        for unverified in &page.fleet.unverified {
            self.members_list.append(&widgets::row(
                &unverified.address,
                &i18n_f("not verified: {}", &[&unverified.problem]),
            ));
        }
        if page.fleet.members.iter().all(|peer| peer.local) {
            self.members_list.append(&widgets::placeholder(&i18n(
                "No other machine yet: give the code to the others; they join from their Room page.",
            )));
        }
        widgets::clear(&self.others_list);
        for other in &page.fleet.other_rooms {
            let label = if other.label.is_empty() {
                i18n("Room without a name")
            } else {
                other.label.clone()
            };
            self.others_list.append(&widgets::row(
                &label,
                &ni18n_f(
                    "{} machine",
                    "{} machines",
                    other.machines,
                    &[&other.machines.to_string()],
                ),
            ));
        }
        if page.fleet.other_rooms.is_empty() {
            self.others_list.append(&widgets::placeholder(&i18n(
                "No other room seen on this network.",
            )));
        }
    }
}
