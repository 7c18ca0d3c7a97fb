// SPDX-License-Identifier: GPL-3.0-or-later
//! `partagpu`, the GNOME app: everything lives in the library so tests reach it.

fn main() -> anyhow::Result<()> {
    partagpu_app::run(std::env::args().skip(1))?;
    Ok(())
}
