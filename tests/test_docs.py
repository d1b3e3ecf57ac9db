"""The README documents every scene key and every command-line option."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from render.cli import parser
from render.scene import SECTIONS

README = (Path(__file__).resolve().parents[1] / "README.md").read_text()


def section_table(name: str) -> str:
    start = README.index(f"#### `[{name}]`")
    end = README.find("####", start + 1)
    return README[start:end if end != -1 else None]


@pytest.mark.parametrize("name", list(SECTIONS))
def test_readme_documents_every_key_of_each_section(name):
    table = section_table(name)
    for f in dataclasses.fields(SECTIONS[name]):
        assert re.search(rf"^\| `{f.name}` \|", table, re.M), f"{name}.{f.name} undocumented"


def test_readme_documents_every_option():
    for action in parser()._actions:
        for option in action.option_strings:
            assert f"`{option}" in README or f", {option}" in README, option
