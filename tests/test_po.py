# SPDX-License-Identifier: GPL-3.0-or-later
"""Translations: po/POTFILES.in lists exactly the sources with translatable strings (the Rust
sources calling i18n and the polkit actions), and po/fr.po translates every one of them (no
untranslated or fuzzy message)."""

import re
import shutil
import subprocess

import pytest

from conftest import REPO

CALL = re.compile(r'\bn?i18n(?:_f)?\(\s*"')
KEYWORDS = ["--keyword=", "--keyword=i18n", "--keyword=i18n_f", "--keyword=ni18n_f:1,2"]
# Translated through gettext's ITS rules for polkit (polkit/meson.build merges them back).
XML_SOURCES = ["polkit/org.partagpu.PartaGPU.Daemon.policy"]


def listed():
    lines = (REPO / "po" / "POTFILES.in").read_text().splitlines()
    return [line for line in lines if line and not line.startswith("#")]


def test_potfiles_lists_every_source_with_translatable_strings():
    found = sorted(str(path.relative_to(REPO)) for path in (REPO / "src").rglob("*.rs")
                   if CALL.search(path.read_text()) and not path.name.endswith("_tests.rs"))
    rust = [path for path in listed() if path.endswith(".rs")]
    assert rust == found
    assert rust == sorted(rust)
    assert [path for path in listed() if not path.endswith(".rs")] == XML_SOURCES


@pytest.mark.skipif(shutil.which("xgettext") is None, reason="needs gettext (scripts/lib/deps.sh)")
def test_french_translates_every_message(tmp_path):
    rust_pot, xml_pot, pot = (tmp_path / f"{name}.pot" for name in ("rust", "xml", "partagpu"))
    rust = [path for path in listed() if path.endswith(".rs")]
    subprocess.run(["xgettext", "--language=C", "--from-code=UTF-8", *KEYWORDS, "-o", str(rust_pot), *rust],
                   cwd=REPO, check=True, capture_output=True)
    # No --language: xgettext finds the ITS rules by the file's name.
    subprocess.run(["xgettext", "-o", str(xml_pot), *XML_SOURCES], cwd=REPO, check=True, capture_output=True)
    subprocess.run(["msgcat", "-o", str(pot), str(rust_pot), str(xml_pot)], check=True)
    merged = tmp_path / "fr.po"
    subprocess.run(["msgmerge", "--quiet", "--no-fuzzy-matching", "-o", str(merged), str(REPO / "po" / "fr.po"), str(pot)],
                   check=True)
    stats = subprocess.run(["msgfmt", "--check", "--statistics", "-o", "/dev/null", str(merged)], capture_output=True,
                           text=True, check=True).stderr
    assert "untranslated" not in stats and "fuzzy" not in stats, stats
    assert (REPO / "po" / "LINGUAS").read_text().split()[-1] == "fr"
