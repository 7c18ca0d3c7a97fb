// SPDX-License-Identifier: GPL-3.0-or-later
//! A gauge of one resource of this machine split in three: the owner's own use, the use by
//! the room's jobs, and a mark at what is lent. A GtkLevelBar shows one value only.

use std::cell::Cell;
use std::rc::Rc;

use relm4::gtk;
use relm4::gtk::prelude::*;

/// Each part of the bar, 0 to 1 of the resource.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct UsageParts {
    /// Used by the owner's programs (everything that is not a job).
    pub own: f64,
    /// Used by the room's jobs.
    pub jobs: f64,
    /// Lent at most (the mark).
    pub lent: f64,
}

/// The bar; cheap to clone (it shares its widget and values).
#[derive(Clone)]
pub struct UsageBar {
    area: gtk::DrawingArea,
    parts: Rc<Cell<UsageParts>>,
}

/// Accent blue for jobs, a neutral grey for the owner: GNOME's palette (libadwaita 1.2
/// exposes no named colours to cairo).
const JOBS_RGB: (f64, f64, f64) = (0.21, 0.52, 0.89);
const OWN_RGB: (f64, f64, f64) = (0.47, 0.47, 0.47);

impl UsageBar {
    /// A bar named `name` (its tooltip too, until values come).
    #[must_use]
    pub fn new(name: &str) -> Self {
        let area: gtk::DrawingArea = super::accessible::labelled(name);
        area.set_content_width(180);
        area.set_content_height(8);
        area.set_valign(gtk::Align::Center);
        area.set_tooltip_text(Some(name));
        let parts = Rc::new(Cell::new(UsageParts::default()));
        let shown = Rc::clone(&parts);
        area.set_draw_func(move |_, cr, width, height| {
            let parts = shown.get();
            let (w, h) = (f64::from(width), f64::from(height));
            let segment = |x: f64, fraction: f64, (r, g, b): (f64, f64, f64), alpha: f64| {
                cr.set_source_rgba(r, g, b, alpha);
                cr.rectangle(x * w, 0.0, fraction * w, h);
                let _ = cr.fill();
            };
            segment(0.0, 1.0, OWN_RGB, 0.18);
            let own = parts.own.clamp(0.0, 1.0);
            let jobs = parts.jobs.clamp(0.0, 1.0 - own);
            segment(0.0, jobs, JOBS_RGB, 1.0);
            segment(jobs, own, OWN_RGB, 0.85);
            // The limit: what jobs may never pass.
            let x = (parts.lent.clamp(0.0, 1.0) * w).clamp(1.0, w - 1.0);
            cr.set_source_rgba(0.1, 0.1, 0.1, 0.9);
            cr.rectangle(x - 1.0, 0.0, 2.0, h);
            let _ = cr.fill();
        });
        Self { area, parts }
    }

    /// The widget to pack.
    #[must_use]
    pub fn widget(&self) -> &gtk::DrawingArea {
        &self.area
    }

    /// New values; `description` says them in words (tooltip and accessible description).
    pub fn set(&self, parts: UsageParts, description: &str) {
        if self.parts.get() != parts {
            self.parts.set(parts);
            self.area.queue_draw();
        }
        // GTK exposes the tooltip as the accessible description (the name stays fixed).
        self.area.set_tooltip_text(Some(description));
    }
}
