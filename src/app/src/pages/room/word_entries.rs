// SPDX-License-Identifier: GPL-3.0-or-later
//! The four entries of the Join form, completed from both word lists.

use partagpu_core::room::Language;
use relm4::adw::prelude::*;
use relm4::{gtk, ComponentSender};

use super::{RoomMsg, RoomPage};
use crate::i18n::i18n_f;

/// One store of every list word (both lists), shared by the four completions.
pub(super) fn word_store() -> gtk::ListStore {
    let store = gtk::ListStore::new(&[relm4::gtk::glib::Type::STRING]);
    for word in completions_all() {
        store.set(&store.append(), &[(0, &word)]);
    }
    store
}

fn completions_all() -> Vec<&'static str> {
    let mut words: Vec<&'static str> = Language::ALL
        .into_iter()
        .flat_map(|l| l.words().iter().map(String::as_str))
        .collect();
    words.sort_unstable();
    words.dedup();
    words
}

pub(super) fn word_entry(
    index: usize,
    store: &gtk::ListStore,
    sender: &ComponentSender<RoomPage>,
) -> gtk::Entry {
    let entry = gtk::Entry::new();
    entry.set_hexpand(true);
    entry.set_placeholder_text(Some(&i18n_f("word {}", &[&(index + 1).to_string()])));
    entry.set_tooltip_text(Some(&i18n_f(
        "Word {} of the room code",
        &[&(index + 1).to_string()],
    )));
    let completion = gtk::EntryCompletion::new();
    completion.set_model(Some(store));
    completion.set_text_column(0);
    completion.set_minimum_key_length(2);
    completion.set_popup_single_match(false);
    // Match on the protocol's folding, so "élè" completes to "eleve".
    completion.set_match_func(|completion, key, iter| {
        let Some(model) = completion.model() else {
            return false;
        };
        let word: String = model.get(iter, 0);
        let prefix = partagpu_core::room::normalise(key);
        !prefix.is_empty() && word.starts_with(prefix.as_str())
    });
    entry.set_completion(Some(&completion));
    let sender = sender.clone();
    entry.connect_changed(move |entry| sender.input(RoomMsg::Word(index, entry.text().to_string())));
    entry
}
