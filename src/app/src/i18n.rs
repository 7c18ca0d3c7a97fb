// SPDX-License-Identifier: GPL-3.0-or-later
//! Translation helpers. Their names are the `--keyword`s xgettext is given (po/README in
//! docs/app.md): `i18n`, `i18n_f` and `ni18n_f:1,2`. Debian 12's xgettext reads `.rs` as C,
//! so only plain `"…"` literals may be passed to them, never raw strings or macros.

use gettextrs::{gettext, ngettext};

use crate::config;

/// Binds the gettext domain and follows `LANGUAGE`/`LANG`. A machine without the
/// translations still runs, in English.
pub fn init() {
    gettextrs::setlocale(gettextrs::LocaleCategory::LcAll, "");
    let dir = config::locale_dir();
    if let Err(error) = gettextrs::bindtextdomain(config::GETTEXT_PACKAGE, &dir) {
        tracing::warn!(dir = %dir.display(), %error, "cannot bind the translations");
    }
    if let Err(error) = gettextrs::bind_textdomain_codeset(config::GETTEXT_PACKAGE, "UTF-8") {
        tracing::warn!(%error, "cannot set the translations' encoding");
    }
    if let Err(error) = gettextrs::textdomain(config::GETTEXT_PACKAGE) {
        tracing::warn!(%error, "cannot select the translation domain");
    }
}

/// The translation of `msgid`.
#[must_use]
pub fn i18n(msgid: &str) -> String {
    gettext(msgid)
}

/// The translation of `format`, each `{}` replaced in order by `args`.
#[must_use]
pub fn i18n_f(format: &str, args: &[&str]) -> String {
    fill(&gettext(format), args)
}

/// The singular or plural translation for `n`, each `{}` replaced in order by `args`.
#[must_use]
pub fn ni18n_f(singular: &str, plural: &str, n: u32, args: &[&str]) -> String {
    fill(&ngettext(singular, plural, n), args)
}

/// Replaces each `{}` of `template` in order; extra `{}` stay, extra arguments are dropped
/// (a translation that forgets a placeholder must not panic).
fn fill(template: &str, args: &[&str]) -> String {
    let mut out = String::with_capacity(template.len() + 16);
    let mut rest = template;
    let mut args = args.iter();
    while let Some(at) = rest.find("{}") {
        out.push_str(&rest[..at]);
        match args.next() {
            Some(arg) => out.push_str(arg),
            None => out.push_str("{}"),
        }
        rest = &rest[at + 2..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::fill;

    #[test]
    fn placeholders_are_filled_in_order() {
        assert_eq!(fill("{} of {}", &["1", "2"]), "1 of 2");
        assert_eq!(fill("no placeholder", &["x"]), "no placeholder");
        assert_eq!(fill("{} and {}", &["only"]), "only and {}");
    }
}
