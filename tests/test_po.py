# SPDX-License-Identifier: GPL-3.0-or-later
"""Translations: po/POTFILES.in lists exactly the sources with translatable strings, and
po/fr.po translates every one of them (no untranslated or fuzzy message)."""

import re
import shutil
import subprocess

import pytest

from conftest import REPO

CALL = re.compile(r'\bn?i18n(?:_f)?\(\s*"')
KEYWORDS = ["--keyword=", "--keyword=i18n", "--keyword=i18n_f", "--keyword=ni18n_f:1,2"]


def listed():
    lines = (REPO / "po" / "POTFILES.in").read_text().splitlines()
    return [line for line in lines if line and not line.startswith("#")]


def test_potfiles_lists_every_source_with_translatable_strings():
    found = sorted(str(path.relative_to(REPO)) for path in (REPO / "src").rglob("*.rs")
                   if CALL.search(path.read_text()) and not path.name.endswith("_tests.rs"))
    assert listed() == found
    assert listed() == sorted(listed())


@pytest.mark.skipif(shutil.which("xgettext") is None, reason="needs gettext (scripts/lib/deps.sh)")
def test_french_translates_every_message(tmp_path):
    pot = tmp_path / "partagpu.pot"
    subprocess.run(["xgettext", "--language=C", "--from-code=UTF-8", *KEYWORDS, "-o", str(pot), *listed()],
                   cwd=REPO, check=True, capture_output=True)
    merged = tmp_path / "fr.po"
    subprocess.run(["msgmerge", "--quiet", "--no-fuzzy-matching", "-o", str(merged), str(REPO / "po" / "fr.po"), str(pot)],
                   check=True)
    stats = subprocess.run(["msgfmt", "--check", "--statistics", "-o", "/dev/null", str(merged)], capture_output=True,
                           text=True, check=True).stderr
    assert "untranslated" not in stats and "fuzzy" not in stats, stats
    assert (REPO / "po" / "LINGUAS").read_text().split()[-1] == "fr"
