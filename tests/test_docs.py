"""The docs: the generated references are current and complete, every relative link
resolves, every command shown checks as shown, and the README stays short."""

from __future__ import annotations

import dataclasses
import importlib.util
import re
import shlex
from pathlib import Path

import pytest

from render.cli import parser
from render.scene import SECTIONS

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]
# The benchmarks' pages (the latest figures, the record of how they moved) link into the docs.
RECORDS = sorted((ROOT / "benchmarks").rglob("*.md"))


def _generator():
    spec = importlib.util.spec_from_file_location("docs_generate", DOCS / "generate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name", ["scenes.md", "cli.md"])
def test_generated_reference_is_current(name):
    built = _generator().FILES[name]()
    assert (DOCS / name).read_text() == built, \
        f"docs/{name} is stale: run python docs/generate.py"


def section_table(text: str, name: str) -> str:
    start = text.index(f"## `[{name}]`")
    end = text.find("\n## ", start + 1)
    return text[start:end if end != -1 else None]


@pytest.mark.parametrize("name", list(SECTIONS))
def test_scene_reference_documents_every_key_of_each_section(name):
    table = section_table((DOCS / "scenes.md").read_text(), name)
    for f in dataclasses.fields(SECTIONS[name]):
        assert re.search(rf"^\| `{f.name}` \|", table, re.M), f"{name}.{f.name} undocumented"
        assert f.metadata["doc"].replace("|", "\\|") in table, f"{name}.{f.name}: meaning"


def test_cli_reference_documents_every_option_with_its_help():
    text = (DOCS / "cli.md").read_text()
    for action in parser()._actions:
        for option in action.option_strings:
            assert f"`{option}" in text, option
        help_text = (action.help or "").replace("%%", "%")
        if help_text and "%(" not in help_text:  # %(default)s and the like are expanded
            assert " ".join(help_text.split()).replace("|", "\\|") in text, action.dest


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    in_code = False
    for line in path.read_text().splitlines():
        if line.startswith("```"):
            in_code = not in_code
        m = re.match(r"^#{1,6} +(.*)", line)
        if m and not in_code:
            base = slug(m.group(1))
            n = seen.get(base, 0)
            seen[base] = n + 1
            out.add(base if n == 0 else f"{base}-{n}")
    return out


def links(path: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", path.read_text(), flags=re.S)  # code is not markdown
    text = re.sub(r"`[^`\n]*`", "", text)
    return re.findall(r"!?\[[^\]]*\]\(([^)\s]+)\)", text)


@pytest.mark.parametrize("page", PAGES + RECORDS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page):
    for target in links(page):
        if re.match(r"^[a-z]+:", target):
            continue  # https:, mailto: — not ours to check
        file, _, anchor = target.partition("#")
        dest = (page.parent / file).resolve() if file else page
        assert dest.exists(), f"{page.name}: {target}: no such file"
        if anchor:
            assert anchor in anchors(dest), f"{page.name}: {target}: no such heading"


def test_link_checker_catches_a_broken_link(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# Title\n\n[ok](#title) [bad](#nowhere) `[not](a-link.md)`\n")
    assert links(page) == ["#title", "#nowhere"]
    assert "title" in anchors(page) and "nowhere" not in anchors(page)


def test_readme_is_short_and_links_the_docs():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 250
    for page in ("cli", "scenes", "model", "outputs", "stills", "loops", "cluster",
                 "troubleshooting", "performance", "api"):
        assert f"(docs/{page}.md" in readme, page
    assert "make render" in readme and "make test" in readme


def documented_commands() -> list[tuple[str, str, bool]]:
    """Every `boids-render` command in the README's and the docs' code blocks, as (page,
    the command, whether the page shows it failing: its next line is the error); the
    synopses' placeholders (SCENE.toml, FILE, …) and the commands that read a still
    another command wrote (--info, --from) left out."""
    found = []
    for page in PAGES:
        for block in re.findall(r"```[a-z]*\n(.*?)```", page.read_text(), re.S):
            lines = re.sub(r"\\\n\s*", " ", block).splitlines()
            for at, line in enumerate(lines):
                line = line.strip().removeprefix("$ ")
                if not line.startswith("boids-render "):
                    continue
                command = re.split(r"\s{3,}", line)[0]  # a synopsis' column of notes
                if re.search(r"\b[A-Z]{3,}\b|--info|--from", command):
                    continue
                fails = at + 1 < len(lines) and lines[at + 1].startswith("boids-render:")
                found.append((page.name, command, fails))
    return found


@pytest.mark.parametrize("page, command, fails", documented_commands(),
                         ids=lambda v: v if isinstance(v, str) else None)
def test_every_documented_command_is_valid(cli, monkeypatch, page, command, fails):
    """Each command a reader may copy checks as the page says (`--check`: the scene, the
    options and the cost, nothing rendered): valid, or refused where the page shows it
    refused."""
    monkeypatch.chdir(ROOT)
    r = cli(*shlex.split(command, comments=True)[1:], "--check")
    assert (r.code == 2) if fails else (r.code == 0), f"{page}: {command}\n{r.err}"


def test_documented_commands_are_found():
    commands = documented_commands()
    assert len(commands) > 40
    assert any(fails for _, _, fails in commands) and not all(f for _, _, f in commands)
