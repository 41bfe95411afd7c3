"""The pages say what the code does: a setting's default quoted in prose is the setting's default, and every
figure or data file under docs/quality is one a page links (or the data of a linked figure)."""

import re
from pathlib import Path

import pytest

from toolsel.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *(p for p in sorted((ROOT / "docs").glob("*.md")) if p.name != "results.md")]
"""The pages that describe the product as it is (results.md records past runs, with the settings they used)."""
QUOTED = re.compile(r"`TOOLSEL_([A-Z0-9_]+)`[,:]? \(?(-?\d[\d,]*(?:\.\d+)?)(?![\d.]| ?[A-Za-z%])")
"""A setting named in prose with a number right after it: "`TOOLSEL_X`, 0.2" or "`TOOLSEL_X` (20"."""


def _quoted() -> list[tuple[str, str, float]]:
    found = []
    for page in PAGES:
        for name, number in QUOTED.findall(page.read_text()):
            found.append((page.name, name.lower(), float(number.replace(",", ""))))
    return found


@pytest.mark.parametrize(("page", "setting", "quoted"), _quoted())
def test_a_default_quoted_in_the_docs_is_the_settings_default(page: str, setting: str, quoted: float) -> None:
    default = Settings.model_fields[setting].default
    assert quoted == pytest.approx(default), f"{page}: TOOLSEL_{setting.upper()} is {default}, not {quoted}"


def test_every_file_under_docs_quality_is_linked() -> None:
    text = "".join(p.read_text() for p in [*PAGES, ROOT / "docs" / "results.md"])
    for path in sorted((ROOT / "docs" / "quality").iterdir()):
        figure = path.with_suffix(".png").name
        assert path.name in text or figure in text, f"docs/quality/{path.name}: no page links it (or its figure)"
