// SPDX-License-Identifier: GPL-3.0-or-later
//! Accessible names for widgets that show no text of their own (sliders, gauges, icon
//! buttons), so that a screen reader says what they are.
//!
//! gtk4-rs 0.11 binds `gtk_accessible_update_property` only from GTK 4.10, Debian 12 has 4.8,
//! and the workspace forbids `unsafe`. GtkBuilder's `<accessibility>` element, which GTK has
//! had since 4.0, sets the same property: so these widgets are made by a one-object builder.
//! The name is fixed at creation; what changes (a gauge's values) goes into the tooltip, which
//! GTK also exposes as the accessible description.

use relm4::gtk;
use relm4::gtk::glib;
use relm4::gtk::prelude::*;

/// A new widget of type `W` whose accessible name is `label`.
///
/// Falls back to an unnamed widget (logged) if the builder refuses the type, which only a
/// type that is not a buildable GTK widget could cause.
#[must_use]
pub fn labelled<W>(label: &str) -> W
where
    W: IsA<gtk::Widget> + IsA<glib::Object> + glib::object::IsClass,
{
    let class = W::static_type().name();
    let builder = gtk::Builder::new();
    let made = builder
        .add_from_string(&definition(class, label))
        .ok()
        .and_then(|()| builder.object::<W>("widget"));
    made.unwrap_or_else(|| {
        tracing::warn!(class, "cannot give this widget an accessible name");
        glib::Object::new::<W>()
    })
}

/// A slider from `min` to `max` in steps of `step`, named `label`.
#[must_use]
pub fn slider(label: &str, min: f64, max: f64, step: f64) -> gtk::Scale {
    let scale: gtk::Scale = labelled(label);
    scale.set_adjustment(&gtk::Adjustment::new(min, min, max, step, step * 10.0, 0.0));
    scale.set_digits(0);
    scale
}

/// A button that shows only `icon`, named `label` (its tooltip says the same).
#[must_use]
pub fn icon_button(icon: &str, label: &str) -> gtk::Button {
    let button: gtk::Button = labelled(label);
    button.set_icon_name(icon);
    button.set_tooltip_text(Some(label));
    button
}

/// An icon that carries meaning (a severity), named `label`.
#[must_use]
pub fn icon(icon: &str, label: &str) -> gtk::Image {
    let image: gtk::Image = labelled(label);
    image.set_icon_name(Some(icon));
    image.set_tooltip_text(Some(label));
    image
}

/// The builder's XML: one object with id "widget" and its accessible label.
fn definition(class: &str, label: &str) -> String {
    format!(
        "<interface><object class=\"{class}\" id=\"widget\"><accessibility>\
         <property name=\"label\">{}</property></accessibility></object></interface>",
        glib::markup_escape_text(label)
    )
}

#[cfg(test)]
mod tests {
    use super::definition;

    #[test]
    fn names_from_the_network_cannot_break_the_definition() {
        let xml = definition("GtkCheckButton", "Salle <B12> & \"co\"");
        assert!(xml.contains("Salle &lt;B12&gt; &amp; &quot;co&quot;"), "{xml}");
        assert!(xml.starts_with("<interface><object class=\"GtkCheckButton\" id=\"widget\">"));
    }
}
