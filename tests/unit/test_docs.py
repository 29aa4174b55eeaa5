"""The repository's docs are self-contained: no pointers to the developers' notes, no broken
relative links, and the SQL reference's rule-code table in sync with grammar/semantic_rules.md.

A user of the pip package has README.md and docs/ (and the demo policy the package writes), never
the developers' design folder, so nothing a user reads may point there.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

from dpsql.demo.people import DEMO_POLICY

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
MARKDOWN = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted(DOCS.glob("*.md"))]

# Pointers into the developers' notes: the folder, the design document, its section numbers
# ("DESIGN 6.6", "DESIGN §3", "DESIGN section 7") and the research notes ("design note §4.3",
# "design/ptr-and-asamp.md").
FORBIDDEN = re.compile(
    r"\.\./shared|\bshared/|shared/design|DESIGN\.md|\bDESIGN\s*(?:§|\d|sections?\b)|design notes?\b|\bdesign/[\w.-]+\.md"
)


def _generator():
    spec = importlib.util.spec_from_file_location("gen_sql_reference", DOCS / "gen_sql_reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _mentions(paths: list[Path]) -> list[str]:
    found = []
    for path in paths:
        text = path.read_text(encoding="utf-8")
        for number, line in enumerate(text.splitlines(), 1):
            if FORBIDDEN.search(line):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    return found


# --- references to the developers' notes -----------------------------------------------------


def test_forbidden_pattern_catches_every_form() -> None:
    # Negative controls: the forms the README used before, and plain prose that must pass.
    for bad in ("see ../shared/design/ptr-and-asamp.md", "DESIGN.md section 4 lists every key", "follows DESIGN §3",
                "(DESIGN 6.6)", "DESIGN section 7", "(design note §4.3)", "design/median-mechanism.md"):
        assert FORBIDDEN.search(bad), bad
    for fine in ("design      |  1266 ± 270", "the design of the ledger", "2 cores, shared, load 2", "a shared ledger"):
        assert not FORBIDDEN.search(fine), fine


def test_readme_and_docs_do_not_point_to_the_developers_notes() -> None:
    assert _mentions(MARKDOWN) == []


def test_non_python_files_under_dpsql_do_not_point_to_the_developers_notes() -> None:
    files = [p for p in (ROOT / "dpsql").rglob("*") if p.is_file() and p.suffix not in (".py", ".pyc")]
    assert _mentions(files) == []


def test_demo_policy_points_to_the_policy_reference() -> None:
    assert not FORBIDDEN.search(DEMO_POLICY)
    assert "docs/policy-reference.md" in DEMO_POLICY
    assert (DOCS / "policy-reference.md").is_file()


def test_python_files_under_dpsql_do_not_point_to_the_developers_notes() -> None:
    assert _mentions(sorted((ROOT / "dpsql").rglob("*.py"))) == []


def test_tests_benchmarks_examples_and_the_grammar_do_not_point_to_the_developers_notes() -> None:
    # A contributor has the repository, not the notes: comments and docstrings cite docs/ or papers.
    # This file is left out: it holds the forbidden forms as negative controls.
    files = [p for folder in ("tests", "bench", "examples", "grammar") for p in sorted((ROOT / folder).rglob("*"))
             if p.is_file() and p.suffix in (".py", ".md", ".lark", ".toml", ".sql") and p != Path(__file__).resolve()]
    assert _mentions(files) == []


# --- relative links --------------------------------------------------------------------------

_LINK = re.compile(r"(?<!!)\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(([^)\s]+)\)")  # link text may hold one [...]


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = heading.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    anchors: set[str] = set()
    counts: dict[str, int] = {}
    in_code = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            in_code = not in_code
            continue
        match = re.match(r"#{1,6} (.+)", line)
        if match and not in_code:
            slug = _slug(match.group(1))
            seen = counts.get(slug, 0)
            anchors.add(slug if seen == 0 else f"{slug}-{seen}")
            counts[slug] = seen + 1
    return anchors


def broken_links(path: Path) -> list[str]:
    """Relative links of a Markdown file whose target file (or heading anchor) does not exist."""
    text = path.read_text(encoding="utf-8")
    text = re.sub(r"```.*?```", "", text, flags=re.DOTALL)  # links inside code blocks are not links
    broken = []
    for target in _LINK.findall(text):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto:, ...
            continue
        file_part, _, anchor = target.partition("#")
        resolved = (path.parent / file_part).resolve() if file_part else path
        if not resolved.exists():
            broken.append(f"{path.name}: {target} (no such file)")
            continue
        if anchor and resolved.suffix == ".md" and anchor not in _anchors(resolved):
            broken.append(f"{path.name}: {target} (no such heading)")
    return broken


def test_link_checker_flags_missing_files_and_anchors(tmp_path: Path) -> None:
    (tmp_path / "other.md").write_text("# A heading\n\n## `[tables.<t>.columns]`\n", encoding="utf-8")
    page = tmp_path / "page.md"
    page.write_text(
        "[ok](other.md) [ok](other.md#a-heading) [ok](other.md#tablestcolumns) [web](https://example.org/x)\n"
        "[gone](missing.md) [bad anchor](other.md#nothing) [`[tables.<t>.rows]`](other.md#tablestrows)\n"
        "```\n[in code](also-missing.md)\n```\n",
        encoding="utf-8",
    )
    assert broken_links(page) == ["page.md: missing.md (no such file)", "page.md: other.md#nothing (no such heading)",
                                  "page.md: other.md#tablestrows (no such heading)"]


@pytest.mark.parametrize("path", MARKDOWN, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_point_to_existing_files(path: Path) -> None:
    assert broken_links(path) == []


def test_docs_index_lists_every_page() -> None:
    index = (DOCS / "README.md").read_text(encoding="utf-8")
    for page in DOCS.glob("*.md"):
        if page.name != "README.md":
            assert f"]({page.name})" in index, page.name


# --- the SQL reference's generated section ---------------------------------------------------


def test_sql_reference_rule_codes_are_fresh() -> None:
    gen = _generator()
    current = (DOCS / "sql-reference.md").read_text(encoding="utf-8")
    assert gen.render(current, gen.generated_section()) == current, "run: python docs/gen_sql_reference.py"


def test_generated_section_follows_the_rules_file() -> None:
    # Negative control: a new code in semantic_rules.md must change the generated section, so
    # the freshness test above fails until the docs are regenerated.
    gen = _generator()
    rules = (ROOT / "grammar" / "semantic_rules.md").read_text(encoding="utf-8")
    changed = rules.replace("| DP401 | server |", "| DP402 | server | a new refusal |\n| DP401 | server |", 1)
    changed += "\n### DP402 — a new refusal\n\n- **Refuses:** x.\n- **Fix:** do y.\n"
    section = gen.generated_section(changed)
    assert section != gen.generated_section(rules)
    assert '| <a id="dp402"></a>DP402 | server | a new refusal | do y. |' in section  # each row anchored (hints link to it)


def test_generated_section_has_every_code_with_its_fix() -> None:
    gen = _generator()
    rules = (ROOT / "grammar" / "semantic_rules.md").read_text(encoding="utf-8")
    section = gen.generated_section(rules)
    codes = re.findall(r"^### (DP\d{3}) ", rules, flags=re.MULTILINE)
    assert len(codes) >= 30
    for code in codes:
        row = next((line for line in section.splitlines() if line.startswith(f'| <a id="{code.lower()}"></a>{code} |')), None)
        assert row is not None, code
        assert not row.endswith("|  |"), f"{code} has no fix"
