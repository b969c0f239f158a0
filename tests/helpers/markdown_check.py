"""Markdown read back with GitHub's rules (CommonMark with GFM tables), for tests of what the reports write."""

from __future__ import annotations

import re

#: A test id of the review: a backtick, a fold's end, an image with a script, a cell's end.
NASTY_ID = "tests/t.py::test_x[a`</details>`<img src=x onerror=alert(1)>|b]"
#: The HTML tags the reports write themselves (the folds and their summaries, code in a summary).
OWN_TAGS = {"details", "/details", "summary", "/summary", "code", "/code"}


def unescaped_pipes(line: str) -> int:
    """The ``|`` of a table row that split cells: those after an even run of backslashes (GFM)."""
    return len(re.findall(r"(?<!\\)(?:\\\\)*\|", line))


def split_row(line: str) -> "list[str]":
    """The cells of a table row, split where GFM splits them."""
    cells, current, backslashes = [], [], 0
    for ch in line:
        if ch == "|" and backslashes % 2 == 0:
            cells.append("".join(current))
            current = []
        else:
            current.append(ch)
        backslashes = backslashes + 1 if ch == "\\" else 0
    return cells + ["".join(current)]


def cell_unescape(cell: str) -> str:
    """What GFM hands the inline parser of a cell: every ``\\|`` becomes ``|``."""
    return cell.replace("\\|", "|")


def code_spans(line: str) -> "tuple[list[str], str]":
    """The contents of the code spans of ``line`` (CommonMark), and the line without them."""
    spans, rest, i = [], [], 0
    while i < len(line):
        if line[i] == "\\" and i + 1 < len(line):
            rest.append(line[i : i + 2])
            i += 2
            continue
        m = re.match(r"`+", line[i:])
        if m:
            fence = m.group(0)
            close = re.search(rf"(?<!`){fence}(?!`)", line[i + len(fence) :])
            if close:
                body = line[i + len(fence) : i + len(fence) + close.start()]
                if body.startswith(" ") and body.endswith(" ") and body.strip():
                    body = body[1:-1]
                spans.append(body)
                i += len(fence) + close.end()
                continue
            rest.append(fence)
            i += len(fence)
            continue
        rest.append(line[i])
        i += 1
    return spans, "".join(rest)


def raw_html(text: str) -> "list[str]":
    """Raw HTML tags outside code spans (an unescaped ``<`` followed by a tag name or ``/``)."""
    return re.findall(r"(?<!\\)<(/?[A-Za-z][^>]*)>", text)


def table_rows(text: str) -> "list[list[str]]":
    """The tables of a Markdown text: per table, its lines (header, delimiter row, rows)."""
    tables, current = [], []
    for line in text.split("\n"):
        if line.startswith("|"):
            current.append(line)
        elif current:
            tables.append(current)
            current = []
    return tables + ([current] if current else [])


def check_report(text: str) -> None:
    """Every table row has its header's cells, every fold is closed, no raw HTML but the reports' own."""
    for table in table_rows(text):
        assert len({unescaped_pipes(line) for line in table}) == 1, table
    lines = text.split("\n")
    assert sum(line.startswith("<details>") for line in lines) == sum(line.startswith("</details>") for line in lines)
    for line in lines:
        if line.startswith("<!-- bpsperf:"):
            continue
        _spans, rest = code_spans(line)
        assert {tag.split()[0] for tag in raw_html(rest)} <= OWN_TAGS, line
