"""Docs state the contract; history lives in git.

* The Markdown docs (``README.md``, ``docs/*.md``, ``benchmarks/README.md``,
  ``examples/*.md``) carry no commit hash and no date, except on the one line
  that says where a table or a figure was measured::

      Measured on <machine>, <YYYY-MM-DD>, commit <7 hex digits>.

* ``benchmarks/README.md`` holds one current table per benchmark, each with
  exactly one such line just before or just after it, and stays short.
* The package's comments and docstrings (``src/c4jax``) carry no commit
  hash, no date and no path into ``benchmarks/`` or ``tests/`` (the wheel
  has neither folder), and no docstring runs over 40 lines.

Fenced code blocks are checked too: a hash or a date there is history as much
as anywhere else, and no block in these files needs one.
"""

from __future__ import annotations

import ast
import io
import pathlib
import re
import tokenize

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "c4jax"

MONTHS = (
    "January|February|March|April|May|June|July|August|September|October|November|December"
    "|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec"
)
# A commit hash: 7 to 40 hex digits as a whole word, with a digit and a letter
# (so neither a number such as 1073741824 nor a word such as "decade" counts).
HEX_WORD = re.compile(r"\b[0-9a-f]{7,40}\b")
DATE = re.compile(rf"\b\d{{4}}-\d{{2}}-\d{{2}}\b|\b(?:{MONTHS})\.?,?\s+(?:19|20)\d\d\b")
MEASURED = re.compile(
    r"Measured on (?P<machine>[^\n]+), (?P<date>\d{4}-\d{2}-\d{2}), commit (?P<commit>[0-9a-f]{7})\."
)
# A path into the repository's benchmarks/ or tests/ folders.
REPO_PATH = re.compile(r"(?<![\w-])(?:benchmarks|tests)/")
MAX_DOCSTRING_LINES = 40
BENCHMARKS_README_MAX_BYTES = 25_000
README_MAX_BYTES = 12_000


def _is_hash(token: str) -> bool:
    return any(c.isdigit() for c in token) and any(c in "abcdef" for c in token)


def history_in(text: str) -> list[str]:
    """The commit-hash-like tokens and the dates in ``text``."""
    found = [m.group() for m in HEX_WORD.finditer(text) if _is_hash(m.group())]
    return found + [m.group() for m in DATE.finditer(text)]


def _docs() -> list[pathlib.Path]:
    paths = [ROOT / "README.md", ROOT / "benchmarks" / "README.md"]
    paths += sorted((ROOT / "docs").glob("*.md")) + sorted((ROOT / "examples").glob("*.md"))
    return [p for p in paths if p.exists()]


def _rel(path: pathlib.Path) -> str:
    return str(path.relative_to(ROOT))


def test_the_patterns_tell_history_from_other_text():
    assert history_in("at d4ba4df, 2026-12-06") == ["d4ba4df", "2026-12-06"]
    assert history_in("rerun in December 2026 against 80aced4f1e2d") == ["80aced4f1e2d", "December 2026"]
    assert history_in("1073741824 bytes, a decade, float32, c4jax, 4453, 0x1BD11BDA, 14x20") == []
    line = "Measured on 2-core CPU (2 CPU devices), 2026-12-06, commit 248699a."
    assert MEASURED.fullmatch(line) and MEASURED.fullmatch(line)["commit"] == "248699a"
    assert REPO_PATH.search("see tests/test_search.py") and REPO_PATH.search("(../benchmarks/README.md)")
    assert not REPO_PATH.search("the tests check it; benchmarks measure it")


@pytest.mark.parametrize("path", _docs(), ids=_rel)
def test_docs_tell_no_history(path):
    bad = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if measured := MEASURED.fullmatch(line.strip()):
            if found := history_in(measured["machine"]):
                bad.append(f"{_rel(path)}:{number}: {', '.join(found)} in the machine's name: {line.strip()}")
            continue
        if MEASURED.search(line):
            bad.append(f"{_rel(path)}:{number}: a 'Measured on ...' line must stand alone: {line.strip()}")
        elif found := history_in(line):
            bad.append(f"{_rel(path)}:{number}: {', '.join(found)}: {line.strip()}")
    why = "history in the docs (git keeps it; a figure's source is one 'Measured on' line)"
    assert not bad, why + ":\n" + "\n".join(bad)


def _tables(lines: list[str]) -> list[tuple[int, int]]:
    """(first, last) line indexes of every Markdown table outside code blocks."""
    tables, fenced, start = [], False, None
    for i, line in enumerate(lines + [""]):
        if line.lstrip().startswith("```"):
            fenced = not fenced
        is_row = not fenced and line.lstrip().startswith("|")
        if is_row and start is None:
            start = i
        elif not is_row and start is not None:
            tables.append((start, i - 1))
            start = None
    return tables


def _neighbour(lines: list[str], i: int, step: int) -> str:
    i += step
    while 0 <= i < len(lines) and not lines[i].strip():
        i += step
    return lines[i].strip() if 0 <= i < len(lines) else ""


def test_every_benchmark_table_says_where_it_was_measured():
    path = ROOT / "benchmarks" / "README.md"
    lines = path.read_text(encoding="utf-8").splitlines()
    tables = _tables(lines)
    assert tables
    bad = []
    for first, last in tables:
        around = [_neighbour(lines, first, -1), _neighbour(lines, last, +1)]
        count = sum(bool(MEASURED.fullmatch(line)) for line in around)
        if count != 1:
            bad.append(f"{_rel(path)}:{first + 1}: {count} 'Measured on' lines next to the table: {lines[first]}")
    assert not bad, "\n".join(bad)


def test_the_docs_stay_short():
    sizes = {
        ROOT / "benchmarks" / "README.md": BENCHMARKS_README_MAX_BYTES,
        ROOT / "README.md": README_MAX_BYTES,
    }
    for path, limit in sizes.items():
        size = len(path.read_bytes())
        assert size <= limit, f"{_rel(path)} is {size} bytes, over {limit}: one current table per benchmark"


def _sources() -> list[pathlib.Path]:
    return sorted(SRC.rglob("*.py"))


def _comments(source: str):
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            yield tok.start[0], tok.string


def _docstrings(tree: ast.AST):
    """(line of the docstring, its raw text, its cleaned text) of the module,
    every class and every function."""
    kinds = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    for node in ast.walk(tree):
        if isinstance(node, kinds) and ast.get_docstring(node, clean=False) is not None:
            yield node.body[0].value.lineno, ast.get_docstring(node, clean=False), ast.get_docstring(node)


def _source_problems(path: pathlib.Path) -> list[str]:
    source = path.read_text(encoding="utf-8")
    where = _rel(path)
    bad = []

    def check(number: int, text: str):
        found = history_in(text) + REPO_PATH.findall(text)
        if found:
            bad.append((number, f"{where}:{number}: {', '.join(found)}: {text.strip()}"))

    for number, comment in _comments(source):
        check(number, comment)
    for first, raw, clean in _docstrings(ast.parse(source, filename=where)):
        for offset, line in enumerate(raw.splitlines()):
            check(first + offset, line)
        length = len(clean.splitlines())
        if length > MAX_DOCSTRING_LINES:
            head = clean.splitlines()[0] if clean else ""
            message = f"a docstring of {length} lines (at most {MAX_DOCSTRING_LINES}): {head}"
            bad.append((first, f"{where}:{first}: {message}"))
    return [message for _, message in sorted(bad)]


@pytest.mark.parametrize("path", _sources(), ids=_rel)
def test_package_comments_and_docstrings_tell_no_history(path):
    bad = _source_problems(path)
    assert not bad, (
        "history, a path outside the package, or a long docstring in the package "
        "(git keeps history; the wheel has no benchmarks/ or tests/):\n" + "\n".join(bad)
    )
