// SPDX-License-Identifier: GPL-3.0-or-later
//! Test hooks for the UI smoke test (tests/test_app_ui.py), off unless asked for.
//!
//! `PARTAGPU_TEST_SNAPSHOT=/dir/name`: once the window has shown the service's data for
//! `PARTAGPU_TEST_SNAPSHOT_DELAY_MS` (default 4000), save `/dir/name.png` (GTK's own
//! rendering of the window) and `/dir/name.txt` (the text of every visible label, entry and
//! slider, one per line, for the test to check real values), then quit.
//! `PARTAGPU_TEST_WINDOW_SIZE=WxH` sets the window's size.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use relm4::adw::prelude::*;
use relm4::gtk::{gdk, glib, graphene};
use relm4::{adw, gtk};

const DEFAULT_DELAY_MS: u64 = 4000;

/// The size asked for by `PARTAGPU_TEST_WINDOW_SIZE`.
#[must_use]
pub fn window_size() -> Option<(i32, i32)> {
    parse_size(&std::env::var("PARTAGPU_TEST_WINDOW_SIZE").ok()?)
}

fn parse_size(text: &str) -> Option<(i32, i32)> {
    let (width, height) = text.split_once('x')?;
    Some((width.parse().ok()?, height.parse().ok()?))
}

/// Schedules the snapshot when the environment asks for one.
pub fn schedule_if_asked(window: &adw::ApplicationWindow) {
    let Some(base) = std::env::var_os("PARTAGPU_TEST_SNAPSHOT").map(PathBuf::from) else {
        return;
    };
    let delay = std::env::var("PARTAGPU_TEST_SNAPSHOT_DELAY_MS")
        .ok()
        .and_then(|ms| ms.parse().ok())
        .unwrap_or(DEFAULT_DELAY_MS);
    let window = window.clone();
    glib::timeout_add_local_once(Duration::from_millis(delay), move || {
        save_when_drawn(window, base, RETRIES);
    });
}

/// On a loaded machine the window may not be mapped or sized when the delay ends: try again
/// a little later, and fail the process (the test then shows why) rather than quit quietly.
const RETRIES: u32 = 40;
const RETRY_MS: u64 = 250;

fn save_when_drawn(window: adw::ApplicationWindow, base: PathBuf, retries_left: u32) {
    let drawn = window.is_mapped() && window.width() > 0 && window.height() > 0;
    match (drawn, drawn.then(|| save(&window, &base))) {
        (true, Some(Ok(()))) => {
            window.application().inspect(|app| app.quit());
        }
        (_, result) if retries_left > 0 => {
            if let Some(Err(error)) = result {
                tracing::warn!(%error, "snapshot not ready, trying again");
            }
            glib::timeout_add_local_once(Duration::from_millis(RETRY_MS), move || {
                save_when_drawn(window, base, retries_left - 1);
            });
        }
        (_, result) => {
            let error = match result {
                Some(Err(error)) => error,
                _ => "the window was never drawn".to_owned(),
            };
            tracing::error!(%error, "snapshot failed");
            std::process::exit(3);
        }
    }
}

fn save(window: &adw::ApplicationWindow, base: &Path) -> Result<(), String> {
    let mut text = String::new();
    collect_text(window.upcast_ref(), &mut text);
    std::fs::write(base.with_extension("txt"), text).map_err(|e| e.to_string())?;
    let (width, height) = (window.width(), window.height());
    let paintable = gtk::WidgetPaintable::new(Some(window));
    let snapshot = gtk::Snapshot::new();
    paintable.snapshot(&snapshot, f64::from(width), f64::from(height));
    let node = snapshot.to_node().ok_or("nothing was drawn")?;
    let renderer = window
        .native()
        .and_then(|n| n.renderer())
        .ok_or("the window has no renderer")?;
    let bounds = graphene::Rect::new(0.0, 0.0, width as f32, height as f32);
    let texture: gdk::Texture = renderer.render_texture(&node, Some(&bounds));
    texture
        .save_to_png(base.with_extension("png"))
        .map_err(|e| e.to_string())
}

/// Every visible text of `widget` and its children, depth first.
fn collect_text(widget: &gtk::Widget, out: &mut String) {
    if !widget.is_visible() || !widget.is_child_visible() {
        return;
    }
    if let Some(label) = widget.downcast_ref::<gtk::Label>() {
        let _ = writeln!(out, "{}", label.text());
    } else if let Some(editable) = widget.downcast_ref::<gtk::Text>() {
        let _ = writeln!(out, "entry: {}", editable.text());
    } else if let Some(scale) = widget.downcast_ref::<gtk::Scale>() {
        let _ = writeln!(out, "slider: {}", scale.value());
    } else if let Some(view) = widget.downcast_ref::<gtk::TextView>() {
        let buffer = view.buffer();
        let _ = writeln!(
            out,
            "log: {}",
            buffer.text(&buffer.start_iter(), &buffer.end_iter(), false)
        );
    }
    let mut child = widget.first_child();
    while let Some(current) = child {
        collect_text(&current, out);
        child = current.next_sibling();
    }
}

#[cfg(test)]
mod tests {
    use super::parse_size;

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_size("1100x1400"), Some((1100, 1400)));
        assert_eq!(parse_size("big"), None);
    }
}
