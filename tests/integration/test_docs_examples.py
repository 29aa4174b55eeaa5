"""Every SQL example in README.md and docs/*.md runs on the bundled demo and answers or refuses as
its text says, so the docs cannot drift from the code.

What counts as an example, and what it must do:

- each statement of a ```sql block (a statement ends with `;` at the end of a line, before an
  optional `-- comment`), run through `dpsql.connect()` on the demo with a fresh in-memory ledger
  and a fixed seed: it must answer, with at least one row and every noisy cell released (no ⊥),
  unless its comment says `-- refused: DPnnn` (then it must raise that code before anything is
  charged) or `-- may be ⊥` (a cell may be ⊥);
- each `dpsql ... -c "..."` command of a ```bash block that runs on the demo (no DATABASE, no
  --policy, no --engine: only -c and --ledger), run in-process through the CLI's `main`: exit
  status 0, or 1 with the code on stderr when its comment says `# refused: DPnnn`;
- each transcript block that starts with `$ dpsql ... -c "..."`: the command runs, and every line
  of the transcript that holds no noisy value (`±` between numbers), no `...` and no table rule
  is in the output (columns compared without their alignment, which follows the noisy widths).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import pytest

import dpsql
from dpsql.cli import main as cli_main

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SEED = 20261122

_FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
_REFUSED = re.compile(r"(?:--|#)\s*refused:\s*(DP\d{3})\b")
_MAY_BE_BOTTOM = re.compile(r"--\s*may be ⊥")
_NOISY = re.compile(r"\d ± \d")


@dataclass(frozen=True)
class Example:
    where: str  # "docs/sql-reference.md:85"
    text: str  # the SQL, or the command line after `dpsql`
    refused: str | None = None  # the code the text says it is refused with
    may_be_bottom: bool = False
    transcript: tuple[str, ...] = ()  # the lines a transcript shows


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _code_part(line: str) -> str:
    """The line without a trailing `-- comment` (outside quotes)."""
    quote = None
    for i, char in enumerate(line):
        if quote:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif line.startswith("--", i):
            return line[:i]
    return line


def sql_examples(text: str, name: str) -> list[Example]:
    """The statements of the ```sql blocks of one page, with the outcome their comments state."""
    found = []
    for block in _FENCE.finditer(text):
        if block.group(1) != "sql":
            continue
        first = _line_of(text, block.start(2))
        lines: list[str] = []
        start = first
        for number, line in enumerate(block.group(2).splitlines(), first):
            if not lines:
                start = number
            lines.append(line)
            if _code_part(line).rstrip().endswith(";"):
                statement = "\n".join(lines)
                code = "\n".join(_code_part(x) for x in lines).strip().rstrip(";").strip()
                refused = _REFUSED.search(statement)
                found.append(Example(f"{name}:{start}", code, refused.group(1) if refused else None,
                                     bool(_MAY_BE_BOTTOM.search(statement))))
                lines = []
        if any(x.strip() for x in lines):
            raise AssertionError(f"{name}:{start}: a statement of a sql block does not end with ';'")
    return found


def _demo_command(line: str) -> tuple[list[str], str | None] | None:
    """(argv after `dpsql`, refused code) when a shell line runs `dpsql -c` on the demo."""
    line = line.split(" && ")[-1].strip()
    line = line.removeprefix("$ ")
    if not line.startswith("dpsql "):
        return None
    refused = _REFUSED.search(line)
    try:
        argv = shlex.split(line[len("dpsql "):], comments=True)
    except ValueError:
        return None  # continued on the next line (`\`): a longer command than the demo's
    options, i = [], 0
    while i < len(argv):
        if argv[i] not in ("-c", "--ledger") or i + 1 == len(argv):
            return None  # another option, a DATABASE, a subcommand: not (only) the demo
        options += argv[i:i + 2]
        i += 2
    if "-c" not in options:
        return None
    return options, refused.group(1) if refused else None


def cli_examples(text: str, name: str) -> list[Example]:
    """`dpsql -c` commands of ```bash blocks, and transcripts that start with `$ dpsql -c`."""
    found = []
    for block in _FENCE.finditer(text):
        first = _line_of(text, block.start(2))
        body = block.group(2).splitlines()
        if block.group(1) == "bash":
            for number, line in enumerate(body, first):
                command = _demo_command(line)
                if command is not None:
                    found.append(Example(f"{name}:{number}", shlex.join(command[0]), command[1]))
        elif block.group(1) == "" and body and body[0].startswith("$ dpsql "):
            command = _demo_command(body[0])
            if command is not None:
                shown = tuple(x for x in body[1:] if not _NOISY.search(x) and "..." not in x and not re.fullmatch(r"[-+]+", x))
                found.append(Example(f"{name}:{first}", shlex.join(command[0]), command[1], transcript=shown))
    return found


def _all(kind) -> list[Example]:
    return [e for page in PAGES for e in kind(page.read_text(encoding="utf-8"), str(page.relative_to(ROOT)))]


SQL = _all(sql_examples)
CLI = _all(cli_examples)


def check_sql(example: Example) -> None:
    """Run one SQL example on the demo (fresh in-memory ledger, fixed seed) and check its outcome."""
    with dpsql.connect(ledger=":memory:", random_seed=SEED) as con:
        cur = con.cursor()
        if example.refused:
            try:
                cur.execute(example.text)
            except dpsql.Error as error:
                assert error.code == example.refused, f"{example.where}: refused with {error}, the text says {example.refused}"
                assert con.ledger() == [], f"{example.where}: a refusal charged the budget"
                return
            raise AssertionError(f"{example.where}: answered, but the text says it is refused with {example.refused}")
        try:
            cur.execute(example.text)
        except dpsql.Error as error:
            raise AssertionError(f"{example.where}: refused, but the text says it answers: {error}") from None
        if cur.description is None:
            return  # SET
        rows = cur.fetchall()
        assert rows, f"{example.where}: no rows"
        if not example.may_be_bottom:
            for column, info in zip(cur.description, cur.noise_info):
                refused = (info or {}).get("refused")
                flags = refused if isinstance(refused, tuple) else (refused,)
                assert not any(flags), f"{example.where}: {column[0]} is ⊥ ({(info or {}).get('refusal')}): mark it '-- may be ⊥' or change it"


def check_cli(example: Example, capsys: pytest.CaptureFixture[str]) -> None:
    status = cli_main(shlex.split(example.text))
    out, err = capsys.readouterr()
    if example.refused:
        assert status == 1 and f"{example.refused}:" in err, f"{example.where}: status {status}\n{out}{err}"
        return
    assert status == 0, f"{example.where}: status {status}\n{out}{err}"
    cells = [_cells(line) for line in out.splitlines()]
    for line in example.transcript:
        assert _cells(line) in cells, f"{example.where}: the transcript shows {line!r}, the output has no such line:\n{out}"


def _cells(line: str) -> tuple[str, ...]:
    return tuple(cell.strip() for cell in line.split("|"))


def test_the_pages_hold_examples() -> None:
    # The extraction itself must find what the pages show: a change of fence or comment
    # convention that hid every example would otherwise pass.
    assert len(SQL) >= 30 and len(CLI) >= 4
    assert any(e.refused for e in SQL) and any(e.refused for e in CLI) and any(e.transcript for e in CLI)
    assert {e.where.split(":")[0] for e in SQL} >= {"README.md", "docs/sql-reference.md", "docs/mechanisms.md"}


@pytest.mark.parametrize("example", SQL, ids=lambda e: e.where)
def test_sql_example(example: Example) -> None:
    check_sql(example)


@pytest.mark.parametrize("example", CLI, ids=lambda e: e.where)
def test_cli_example(example: Example, capsys: pytest.CaptureFixture[str]) -> None:
    check_cli(example, capsys)


# --- negative controls: the checks catch a wrong text ------------------------------------------


def test_extraction_reads_statements_and_their_stated_outcomes() -> None:
    page = ("```sql\nSELECT COUNT(*)\n  FROM people;  -- every row\nSELECT * FROM people;  -- refused: DP104\n"
            "SELECT dept, MEDIAN(income, 100) FROM people GROUP BY dept;  -- may be ⊥\n```\n"
            "```bash\ndpsql -c \"SELECT 1\"   # refused: DP103\ndpsql --policy p.toml -c \"SELECT 1\"\n```\n"
            "```\n$ dpsql -c \"SELECT COUNT(*) FROM people\"\n    COUNT(*)\n-----------\n 3000 ± 270\n(1 row)\n```\n")
    assert sql_examples(page, "p.md") == [
        Example("p.md:2", "SELECT COUNT(*)\n  FROM people"),
        Example("p.md:4", "SELECT * FROM people", "DP104"),
        Example("p.md:5", "SELECT dept, MEDIAN(income, 100) FROM people GROUP BY dept", None, True),
    ]
    assert cli_examples(page, "p.md") == [
        Example("p.md:8", "-c 'SELECT 1'", "DP103"),  # the --policy line is not the demo's
        Example("p.md:12", "-c 'SELECT COUNT(*) FROM people'", None, transcript=("    COUNT(*)", "(1 row)")),
    ]
    with pytest.raises(AssertionError, match="does not end with ';'"):
        sql_examples("```sql\nSELECT COUNT(*) FROM people\n```\n", "p.md")


@pytest.mark.parametrize("wrong", [
    Example("answers, said refused", "SELECT COUNT(*) FROM people", "DP104"),
    Example("refused, said answers", "SELECT * FROM people"),
    Example("refused with another code", "SELECT * FROM people", "DP105"),
    # PTR with a bound the demo's groups do not meet at epsilon 0.1: the example docs used to show
    Example("⊥, said answers", "SELECT dept, MEDIAN(income, 100) FROM people GROUP BY dept"),
], ids=lambda e: e.where)
def test_negative_control_a_wrong_outcome_is_caught(wrong: Example) -> None:
    with pytest.raises(AssertionError):
        check_sql(wrong)


def test_negative_control_a_transcript_line_the_output_lacks_is_caught(capsys: pytest.CaptureFixture[str]) -> None:
    good = Example("t", "-c 'SELECT dept, COUNT(*) FROM people GROUP BY dept'", transcript=("dept | COUNT(*)", "(12 rows)  cost: epsilon 0.1, delta 0; ± is a 95% interval"))
    check_cli(good, capsys)
    with pytest.raises(AssertionError, match="the transcript shows"):
        check_cli(Example("t", good.text, transcript=("dept | COUNT(*)", "(11 rows)  cost: epsilon 0.1, delta 0; ± is a 95% interval")), capsys)
    with pytest.raises(AssertionError, match="status 1"):
        check_cli(Example("t", "-c 'SELECT * FROM people'"), capsys)
