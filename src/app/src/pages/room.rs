// SPDX-License-Identifier: GPL-3.0-or-later
//! Room: create a room (its code shown once, with a copy button) or join one (four
//! entries checked word by word, completed from the word lists, a choice among the rooms
//! seen on the network); reveal the code on demand; leave; the machines of the room and
//! the other rooms around.
//!
//! The code is on screen only right after Create and after an explicit Reveal, and never
//! logged: requests log nothing about their arguments.

mod code_entry;
mod members;
mod view;
mod word_entries;

use partagpu_client::{FleetView, JoinOptions, RoomInfo, VisibleRoom};
use partagpu_core::room::{Language, CODE_WORDS};
use relm4::{adw, ComponentParts, ComponentSender};
use zeroize::Zeroizing;

pub use code_entry::{completions, word_state, CodeDraft, WordState};

use crate::app_error::{AppError, Failure};
use crate::daemon_link::Connected;
use crate::i18n::i18n;

/// The page.
pub struct RoomPage {
    client: Option<Connected>,
    info: Option<RoomInfo>,
    fleet: FleetView,
    /// The code, only between Create/Reveal and Hide (or leaving the room).
    shown_code: Option<Zeroizing<String>>,
    draft: CodeDraft,
    visible: Vec<VisibleRoom>,
    chosen_room: Option<String>,
    searching: bool,
    busy: bool,
    language: Language,
    /// Set when the entries must show the draft again (after a paste spread over them).
    entries_stale: bool,
}

/// What the page is told.
#[derive(Debug)]
pub enum RoomMsg {
    /// The service came or went.
    Connection(Option<Connected>),
    /// The room's public facts.
    Info(RoomInfo),
    /// The machines of the room.
    Fleet(Box<FleetView>),
    /// The language of a new room's code.
    Language(Language),
    /// Create a room with this label.
    Create(String),
    /// Entry `index` of the code changed.
    Word(usize, String),
    /// Look for rooms on the network.
    Search,
    /// The room to join among several.
    Choose(Option<String>),
    /// Join with the typed code.
    Join,
    /// Show the code (asks the administrator's password).
    Reveal,
    /// Take the code off the screen.
    Hide,
    /// Leave the room.
    Leave,
}

/// Results of the page's requests.
#[derive(Debug)]
pub enum RoomCommand {
    /// A code to show (from Create or Reveal). `Debug` would print it: see the impl below.
    Code(Result<Secret, Failure>),
    /// The rooms seen on the network.
    Visible(Result<Vec<VisibleRoom>, Failure>),
    /// Join or Leave ended.
    Done(Result<(), Failure>),
}

/// A room code in a message; its `Debug` hides it, so a logged message never shows it.
pub struct Secret(pub Zeroizing<String>);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(..)")
    }
}

/// The default language of a new room's code: French when the user reads French.
#[must_use]
pub fn default_code_language(locale_variables: &[Option<String>]) -> Language {
    let first = locale_variables.iter().flatten().find(|value| !value.is_empty());
    match first {
        Some(value) if value.starts_with("fr") => Language::French,
        _ => Language::English,
    }
}

impl RoomPage {
    fn client(&self, sender: &ComponentSender<Self>, action: &str) -> Option<partagpu_client::Client> {
        match &self.client {
            Some(Connected(client)) => Some(client.clone()),
            None => {
                let _ = sender.output(Failure::new(action.to_owned(), AppError::NotConnected));
                None
            }
        }
    }

    fn joined(&self) -> bool {
        self.info.as_ref().is_some_and(|info| info.joined)
    }
}

impl relm4::Component for RoomPage {
    type Init = ();
    type Input = RoomMsg;
    type Output = Failure;
    type CommandOutput = RoomCommand;
    type Root = adw::PreferencesPage;
    type Widgets = view::RoomWidgets;

    fn init_root() -> Self::Root {
        adw::PreferencesPage::new()
    }

    fn init((): (), root: Self::Root, sender: ComponentSender<Self>) -> ComponentParts<Self> {
        let locale = ["LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG"].map(|name| std::env::var(name).ok());
        let model = RoomPage {
            client: None,
            info: None,
            fleet: FleetView::default(),
            shown_code: None,
            draft: CodeDraft::default(),
            visible: Vec::new(),
            chosen_room: None,
            searching: false,
            busy: false,
            language: default_code_language(&locale),
            entries_stale: false,
        };
        let widgets = view::RoomWidgets::build(&root, &sender, model.language);
        ComponentParts { model, widgets }
    }

    fn update(&mut self, message: RoomMsg, sender: ComponentSender<Self>, _root: &Self::Root) {
        match message {
            RoomMsg::Connection(client) => self.client = client,
            RoomMsg::Info(info) => {
                if !info.joined {
                    self.shown_code = None;
                }
                self.info = Some(info);
            }
            RoomMsg::Fleet(fleet) => self.fleet = *fleet,
            RoomMsg::Language(language) => self.language = language,
            RoomMsg::Word(index, text) => self.entries_stale = self.draft.set_word(index, &text),
            RoomMsg::Choose(room) => self.chosen_room = room,
            RoomMsg::Hide => self.shown_code = None,
            RoomMsg::Create(label) => {
                let action = i18n("Could not create the room");
                let language = self.language.tag();
                if let Some(client) = self.client(&sender, &action) {
                    self.busy = true;
                    sender.oneshot_command(async move {
                        let result = client.create_room(label.trim(), language).await;
                        RoomCommand::Code(
                            result
                                .map(|code| Secret(Zeroizing::new(code)))
                                .map_err(|e| Failure::new(action, e)),
                        )
                    });
                }
            }
            RoomMsg::Reveal => {
                let action = i18n("Could not show the code");
                if let Some(client) = self.client(&sender, &action) {
                    sender.oneshot_command(async move {
                        let result = client.reveal_code().await;
                        RoomCommand::Code(
                            result
                                .map(|code| Secret(Zeroizing::new(code)))
                                .map_err(|e| Failure::new(action, e)),
                        )
                    });
                }
            }
            RoomMsg::Search => {
                let action = i18n("Could not look for rooms");
                if let Some(client) = self.client(&sender, &action) {
                    self.searching = true;
                    sender.oneshot_command(async move {
                        RoomCommand::Visible(
                            client.visible_rooms().await.map_err(|e| Failure::new(action, e)),
                        )
                    });
                }
            }
            RoomMsg::Join => {
                let action = i18n("Could not join the room");
                let code = match self.draft.code() {
                    Ok(code) => code,
                    Err(sentence) => {
                        let _ = sender.output(Failure::new(action, AppError::Local(sentence)));
                        return;
                    }
                };
                let options = JoinOptions {
                    room: self.chosen_room.clone(),
                    ..JoinOptions::default()
                };
                if let Some(client) = self.client(&sender, &action) {
                    self.busy = true;
                    sender.oneshot_command(async move {
                        let result = client.join_room(&code, &options).await;
                        RoomCommand::Done(result.map(|_| ()).map_err(|e| Failure::new(action, e)))
                    });
                }
            }
            RoomMsg::Leave => {
                let action = i18n("Could not leave the room");
                if let Some(client) = self.client(&sender, &action) {
                    self.shown_code = None;
                    sender.oneshot_command(async move {
                        RoomCommand::Done(
                            client
                                .leave_room()
                                .await
                                .map(|_| ())
                                .map_err(|e| Failure::new(action, e)),
                        )
                    });
                }
            }
        }
    }

    fn update_cmd(&mut self, message: RoomCommand, sender: ComponentSender<Self>, _root: &Self::Root) {
        let failure = match message {
            RoomCommand::Code(Ok(Secret(code))) => {
                self.busy = false;
                self.shown_code = Some(code);
                None
            }
            RoomCommand::Visible(Ok(rooms)) => {
                self.searching = false;
                if !rooms
                    .iter()
                    .any(|room| Some(&room.room_id) == self.chosen_room.as_ref())
                {
                    self.chosen_room = None;
                }
                self.visible = rooms;
                None
            }
            RoomCommand::Done(Ok(())) => {
                self.busy = false;
                self.draft.clear();
                self.entries_stale = true;
                None
            }
            RoomCommand::Code(Err(failure))
            | RoomCommand::Visible(Err(failure))
            | RoomCommand::Done(Err(failure)) => {
                self.busy = false;
                self.searching = false;
                Some(failure)
            }
        };
        if let Some(failure) = failure {
            let _ = sender.output(failure);
        }
    }

    fn update_view(&self, widgets: &mut view::RoomWidgets, sender: ComponentSender<Self>) {
        widgets.refresh(self, &sender);
    }
}

/// Entries of the Join form, for the view.
const ENTRIES: usize = CODE_WORDS;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_code_language_follows_the_reader() {
        let env = |v: &[Option<&str>]| v.iter().map(|s| s.map(str::to_owned)).collect::<Vec<_>>();
        assert_eq!(default_code_language(&env(&[Some("fr"), None])), Language::French);
        assert_eq!(
            default_code_language(&env(&[None, None, None, Some("fr_FR.UTF-8")])),
            Language::French
        );
        assert_eq!(
            default_code_language(&env(&[Some(""), Some("en_GB.UTF-8")])),
            Language::English
        );
        assert_eq!(default_code_language(&env(&[None])), Language::English);
    }

    #[test]
    fn a_secret_never_shows_in_debug() {
        let secret = Secret(Zeroizing::new("abandon ability able about".into()));
        assert_eq!(
            format!("{:?}", RoomCommand::Code(Ok(secret))),
            "Code(Ok(Secret(..)))"
        );
    }
}
