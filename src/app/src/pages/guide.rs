// SPDX-License-Identifier: GPL-3.0-or-later
//! Guide: what PartaGPU does and how to use it safely, in the reader's language. The text
//! is static; every sentence goes through gettext (po/fr.po).

use relm4::adw::prelude::*;
use relm4::{adw, gtk, ComponentParts, ComponentSender, SimpleComponent};

use crate::i18n::i18n;
use crate::widgets;

/// The notebook example; code is not translated.
const NOTEBOOK_EXAMPLE: &str = "import partagpu\n\nprint(partagpu.discover())     # the machines of the room\n\n# Streams the merged log, then saves rank 0's model.pt next to train.py.\njob = partagpu.distribute(\"train.py\", \"--epochs\", \"2\", nodes=3)\nprint(job.artifacts)\n\n# Or without waiting:\njob = partagpu.distribute(\"train.py\", nodes=3, wait=False)\nfor line in job.logs(follow=True):\n    print(line, end=\"\")";

/// The page (no state: the text only changes with the language).
pub struct GuidePage;

/// A section: a title and its paragraphs.
struct Section {
    title: String,
    paragraphs: Vec<String>,
}

fn sections() -> Vec<Section> {
    vec![
        Section {
            title: i18n("What PartaGPU does"),
            paragraphs: vec![
                i18n("PartaGPU pools the idle machines of a lab for training models. Each machine lends what its owner chooses, processor, memory and graphics cards, and the owner can take everything back at once."),
                i18n("Anyone in the room can then run one training across several machines, from a notebook or a terminal."),
            ],
        },
        Section {
            title: i18n("Joining a room"),
            paragraphs: vec![
                i18n("A room is the group of machines of a lab. The first machine creates it on the Room page and shows a code of four words. On every other machine, open the Room page, type the four words and press Join."),
                i18n("Each word is checked as you type, so a typo costs nothing. The code is never sent over the network: the machines prove to each other that they know it."),
            ],
        },
        Section {
            title: i18n("Lending safely"),
            paragraphs: vec![
                i18n("On My sharing, the sliders set the most a job from the room may take: a share of the processor, an amount of memory, a share of each graphics card. They apply at once, also to running jobs."),
                i18n("Pause freezes the jobs running here within a second and starts nothing new; Off refuses new work. Your own programs always come first."),
            ],
        },
        Section {
            title: i18n("Training from a notebook"),
            paragraphs: vec![i18n("The Python package partagpu sends a training script and its folder to the machines of the room and runs it there with PyTorch's torchrun. The output comes back live and rank 0's files come back at the end:")],
        },
        Section {
            title: i18n("What the sandbox and the encryption protect"),
            paragraphs: vec![
                i18n("A job runs as an unprivileged user in a sandbox: it sees only its own folder and a read-only system, none of your files, no screen and no network except towards the other machines of its training. It can never use more than you lend."),
                i18n("Between machines, every message is encrypted and authenticated with keys that come from the room code; each machine also has its own identity key, remembered by the others. Wrong codes are slowed down and written to the security journal."),
                i18n("What it does not protect yet: a job may still use any system call of the kernel, and jobs sharing one graphics card are not isolated from each other."),
            ],
        },
        Section {
            title: i18n("Questions"),
            paragraphs: vec![
                i18n("Does adding a machine make training faster? Usually, when the machines have graphics cards and the model is large enough: each machine computes part of every step, and they exchange gradients over the network."),
                i18n("What happens when I pause? The jobs on this machine are frozen; if the pause lasts longer than the grace period, they are stopped and their submitter is told."),
                i18n("The app says the service is not running: the service partagpud must be installed and started by an administrator, with: sudo systemctl enable --now partagpud"),
                i18n("Who sees the room code? Only whoever created the room, and an administrator who asks to reveal it. It is never shown elsewhere, nor written to a log."),
            ],
        },
    ]
}

impl SimpleComponent for GuidePage {
    type Init = ();
    type Input = ();
    type Output = ();
    type Root = adw::PreferencesPage;
    type Widgets = ();

    fn init_root() -> Self::Root {
        adw::PreferencesPage::new()
    }

    fn init((): (), root: Self::Root, _sender: ComponentSender<Self>) -> ComponentParts<Self> {
        for section in sections() {
            let group = widgets::group(&section.title, "");
            let text = gtk::Box::new(gtk::Orientation::Vertical, 12);
            for paragraph in &section.paragraphs {
                text.append(&widgets::paragraph(paragraph));
            }
            if section.title == i18n("Training from a notebook") {
                let code = widgets::paragraph(NOTEBOOK_EXAMPLE);
                code.add_css_class("monospace");
                code.set_wrap(false);
                // Code is meant to be copied.
                code.set_selectable(true);
                code.set_margin_top(12);
                code.set_margin_bottom(12);
                code.set_margin_start(12);
                code.set_margin_end(12);
                let card = gtk::Box::new(gtk::Orientation::Vertical, 0);
                card.add_css_class("card");
                card.append(&code);
                text.append(&card);
            }
            group.add(&text);
            root.add(&group);
        }
        ComponentParts {
            model: GuidePage,
            widgets: (),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_guide_covers_what_the_issue_asks() {
        let sections = sections();
        assert_eq!(sections.len(), 6);
        assert!(sections
            .iter()
            .all(|s| !s.title.is_empty() && !s.paragraphs.is_empty()));
        assert!(NOTEBOOK_EXAMPLE.contains("partagpu.distribute(\"train.py\""));
    }
}
