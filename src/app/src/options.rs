// SPDX-License-Identifier: GPL-3.0-or-later
//! The app's own command line. GTK is given no arguments (ours would confuse it).

use std::fmt;

/// A page of the main window, in the order the switcher shows them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Page {
    /// What this machine lends.
    Sharing,
    /// The room and its machines.
    Room,
    /// The jobs submitted from here.
    Jobs,
    /// The security journal.
    Security,
    /// How PartaGPU works.
    Guide,
}

impl Page {
    /// Every page, in switcher order.
    pub const ALL: [Page; 5] = [Page::Sharing, Page::Room, Page::Jobs, Page::Security, Page::Guide];

    /// The stable name used by `--page` and as the view stack's child name.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Page::Sharing => "sharing",
            Page::Room => "room",
            Page::Jobs => "jobs",
            Page::Security => "security",
            Page::Guide => "guide",
        }
    }

    /// Parses [`Page::name`]'s form.
    #[must_use]
    pub fn from_name(name: &str) -> Option<Page> {
        Page::ALL.into_iter().find(|page| page.name() == name)
    }
}

/// What the command line asked for.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Options {
    /// The page shown first.
    pub page: Option<Page>,
    /// `--version`.
    pub version: bool,
    /// `--help`.
    pub help: bool,
    /// `--background`: start with the tray only (the autostart entry); the window opens
    /// from the tray or when the app is launched again.
    pub background: bool,
}

/// A command line the app does not understand.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OptionsError {
    /// `--page` without a known page.
    #[error("unknown page '{0}': use sharing, room, jobs, security or guide")]
    UnknownPage(String),
    /// `--page` at the end.
    #[error("--page needs a page name")]
    MissingPage,
    /// Anything else.
    #[error("unknown option '{0}' (see --help)")]
    Unknown(String),
}

/// The `--help` text.
pub const USAGE: &str =
    "Usage: partagpu [--page sharing|room|jobs|security|guide] [--background] [--version]";

impl Options {
    /// Parses the arguments after the program name.
    ///
    /// # Errors
    /// [`OptionsError`] for anything but the options above.
    pub fn parse<I: IntoIterator<Item = String>>(args: I) -> Result<Options, OptionsError> {
        let mut options = Options::default();
        let mut args = args.into_iter();
        while let Some(arg) = args.next() {
            let page_name = match arg.as_str() {
                "--page" => Some(args.next().ok_or(OptionsError::MissingPage)?),
                _ => arg.strip_prefix("--page=").map(str::to_owned),
            };
            if let Some(name) = page_name {
                options.page = Some(Page::from_name(&name).ok_or(OptionsError::UnknownPage(name))?);
                continue;
            }
            match arg.as_str() {
                "--version" => options.version = true,
                "--background" => options.background = true,
                "-h" | "--help" => options.help = true,
                _ => return Err(OptionsError::Unknown(arg)),
            }
        }
        Ok(options)
    }
}

impl fmt::Display for Page {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Options, OptionsError> {
        Options::parse(args.iter().map(|a| (*a).to_owned()))
    }

    #[test]
    fn pages_parse_in_both_forms() {
        assert_eq!(parse(&["--page", "room"]).unwrap().page, Some(Page::Room));
        assert_eq!(parse(&["--page=guide"]).unwrap().page, Some(Page::Guide));
        assert_eq!(parse(&[]).unwrap(), Options::default());
        for page in Page::ALL {
            assert_eq!(Page::from_name(page.name()), Some(page));
        }
    }

    #[test]
    fn mistakes_are_named() {
        assert_eq!(
            parse(&["--page", "x"]),
            Err(OptionsError::UnknownPage("x".into()))
        );
        assert_eq!(parse(&["--page"]), Err(OptionsError::MissingPage));
        assert_eq!(
            parse(&["--frobnicate"]),
            Err(OptionsError::Unknown("--frobnicate".into()))
        );
        assert!(parse(&["--version"]).unwrap().version);
        assert!(parse(&["--background"]).unwrap().background);
    }
}
