"""The configuration table of docs/operators.md, generated from ``Settings`` so the two cannot disagree: one row per
field with its environment variable, its default and its docstring."""

import json
import re
from pathlib import Path
from typing import Any, NamedTuple

from pydantic_settings import BaseSettings

START = "<!-- settings-table:start -->"
END = "<!-- settings-table:end -->"
HEADER = "| variable | default | meaning |\n|---|---|---|\n"


class SettingRow(NamedTuple):
    variable: str
    default: str
    meaning: str


def show_default(value: Any) -> str:
    """A default as the environment would spell it; a path under the user's home directory starts with ``~``."""
    if value is None:
        return "unset"
    if isinstance(value, bool):
        text = str(value).lower()
    elif isinstance(value, Path):
        home = str(Path.home())
        text = "~" + str(value)[len(home) :] if str(value).startswith(home + "/") else str(value)
    elif isinstance(value, float):
        text = f"{value:g}" if float(f"{value:g}") == value else repr(value)
    elif isinstance(value, list | dict):
        text = json.dumps(value)
    else:
        text = str(value)
    return f"`{text}`"


def settings_rows(model: type[BaseSettings]) -> list[SettingRow]:
    """A row per field of ``model``, in declaration order; the meaning is the field's description (from its
    docstring), on one line."""
    prefix = model.model_config.get("env_prefix", "")
    rows = []
    for name, field in model.model_fields.items():
        default = field.get_default(call_default_factory=True, validated_data={})
        meaning = " ".join((field.description or "").split()).replace("|", "\\|")
        rows.append(SettingRow(f"`{(prefix + name).upper()}`", show_default(default), meaning))
    return rows


def settings_table(model: type[BaseSettings]) -> str:
    """The markdown table of ``model``'s settings."""
    return HEADER + "".join(f"| {r.variable} | {r.default} | {r.meaning} |\n" for r in settings_rows(model))


def with_settings_table(text: str, table: str) -> str:
    """``text`` (the README) with ``table`` between the settings-table markers."""
    pattern = re.compile(re.escape(START) + r"\n.*?" + re.escape(END), re.DOTALL)
    if not pattern.search(text):
        raise ValueError(f"no {START} ... {END} markers")
    return pattern.sub(lambda _: f"{START}\n{table}{END}", text, count=1)
