"""Pieces of a report (headings, paragraphs, lists, tables, folded parts, pictures), as Markdown or HTML.

A report is made once, as a list of pieces (:mod:`.markdown` from a results
document, :mod:`.pages` for trends and pictures); :func:`markdown` and
:func:`html_page` only write the pieces down, so that the Markdown file and the
HTML page say the same things. Plain Python, no package import.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from typing import Sequence, Tuple, Union
from urllib.parse import quote

__all__ = [
    "Block",
    "Bullets",
    "Code",
    "Folded",
    "Heading",
    "Image",
    "Paragraph",
    "Status",
    "Strong",
    "Table",
    "code_md",
    "html_page",
    "markdown",
    "markdown_lines",
    "plain_md",
    "text_lines",
]


@dataclass(frozen=True)
class Code:
    """Inline code: a test id, a trick, a commit, a command."""

    text: str


@dataclass(frozen=True)
class Strong:
    """Inline bold text."""

    text: str


@dataclass(frozen=True)
class Status:
    """A verdict's status: with its mark in Markdown and HTML (``✅ ok``), the word in upper case as text."""

    status: str

    #: the marks of the statuses a verdict can have
    MARKS = {
        "ok": "✅ ok",
        "regression": "❌ regression",
        "improvement": "🚀 improvement",
        "no-baseline": "⚪ no baseline",
        "inconclusive": "❔ inconclusive",
    }

    @property
    def marked(self) -> str:
        """The status with its mark (an unknown status as it is)."""
        return self.MARKS.get(self.status, self.status)


#: One run of inline text: plain, code, bold or a status.
Inline = Union[str, Code, Strong, Status]
#: Inline text: one run, or several in a row.
Text = Union[Inline, Tuple[Inline, ...]]


@dataclass(frozen=True)
class Heading:
    """A heading; level 2 is a report's title (Markdown ``##``, an HTML page's ``<h1>``)."""

    level: int
    text: Text


@dataclass(frozen=True)
class Paragraph:
    """A paragraph; a ``note`` (how a table was computed, a caveat) is set in italics."""

    text: Text
    note: bool = False


@dataclass(frozen=True)
class Bullets:
    """A list; ``loose`` puts a blank line between its items in Markdown."""

    items: Tuple[Text, ...]
    loose: bool = False


@dataclass(frozen=True)
class Table:
    """A table of text cells; ``right`` marks the columns aligned right (numbers)."""

    header: Tuple[str, ...]
    rows: Tuple[Tuple[Text, ...], ...]
    right: Tuple[bool, ...]


@dataclass(frozen=True)
class Folded:
    """Pieces folded under a summary line (``<details>``), open on a click."""

    summary: Text
    blocks: Tuple["Block", ...]


@dataclass(frozen=True)
class Image:
    """A picture: its title and its address relative to the report."""

    title: str
    src: str


Block = Union[Heading, Paragraph, Bullets, Table, Folded, Image]


def _runs(text: Text) -> "Tuple[Inline, ...]":
    return text if isinstance(text, tuple) else (text,)


#: Characters that start Markdown or HTML inline wherever they stand: code, emphasis, links, raw HTML
#: (``</details>`` would close a fold), entities, table cells, and the backslash that escapes them.
_MD_SPECIAL = re.compile(r"([\\`*\[\]<>|~&])")
#: ``_`` emphasizes only at a word's edge (GFM: never inside a word, as in ``omp_threads``).
_EDGE_UNDERSCORE = re.compile(r"(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")
#: Line breaks and other control characters: a line break inside a cell ends the table's row, one
#: at a line's start can open an HTML block (``</details>``), whatever inline piece it is in.
_CONTROL = re.compile(r"[\x00-\x1f\x7f]+")


def _one_line(text: str) -> str:
    return _CONTROL.sub(" ", str(text))


def plain_md(text: str) -> str:
    """``text`` as literal Markdown text (GitHub's, CommonMark with tables): each character that could
    start code, emphasis, a link, raw HTML or a table cell escaped with a backslash, line breaks made spaces."""
    return _EDGE_UNDERSCORE.sub(r"\\_", _MD_SPECIAL.sub(r"\\\1", _one_line(text)))


def code_md(text: str) -> str:
    """``text`` as one Markdown code span: fenced by one backtick more than its longest run of them
    (CommonMark), padded with a space where it starts or ends with a backtick; line breaks made spaces."""
    text = _one_line(text)
    if not text:
        return ""
    fence = "`" * (max((len(run) for run in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text[0] == "`" or text[-1] == "`" or (text[0] == " " and text[-1] == " ") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _cell_pipes(code: str) -> str:
    """A code span made fit for a table cell: GFM splits cells at every ``|`` not escaped, inside code
    too, and ``\\|`` escapes it there; a run of backslashes before it must then be odd (``\\\\`` is one
    escaped backslash, and the ``|`` after it would split)."""
    return re.sub(r"(\\*)\|", lambda m: m.group(1) + ("\\" if len(m.group(1)) % 2 else "") + "\\|", code)


def _inline_md(text: Text, *, cell: bool = False) -> str:
    out = []
    for part in _runs(text):
        if isinstance(part, Code):
            out.append(_cell_pipes(code_md(part.text)) if cell else code_md(part.text))
        elif isinstance(part, Strong):
            inner = plain_md(part.text)
            out.append(f"**{inner}**" if inner else "")
        elif isinstance(part, Status):
            out.append(plain_md(part.marked))
        else:
            out.append(plain_md(part))
    return "".join(out)


#: What opens a block at a line's start: a heading, a list item, a setext underline, a numbered item.
_BLOCK_START = re.compile(r"^(?:([#+=-])|(\d+)([.)]))")


def _line_md(text: Text) -> str:
    """Inline text that starts a line (a paragraph, a list item): a leading ``#``, ``-``, ``1.`` escaped too."""
    md = _inline_md(text)
    return _BLOCK_START.sub(lambda m: "\\" + m.group(1) if m.group(1) else m.group(2) + "\\" + m.group(3), md, count=1)


def _inline_html(text: Text) -> str:
    out = []
    for part in _runs(text):
        if isinstance(part, Code):
            out.append(f"<code>{html.escape(part.text, quote=False)}</code>")
        elif isinstance(part, Strong):
            out.append(f"<strong>{html.escape(part.text, quote=False)}</strong>")
        elif isinstance(part, Status):
            out.append(html.escape(part.marked, quote=False))
        else:
            out.append(html.escape(part, quote=False))
    return "".join(out)


def _block_md(block: Block) -> str:
    if isinstance(block, Heading):
        return "#" * block.level + " " + _inline_md(block.text)
    if isinstance(block, Paragraph):
        text = _line_md(block.text)
        return f"_{text}_" if block.note and text else text
    if isinstance(block, Bullets):
        return ("\n\n" if block.loose else "\n").join("- " + _line_md(item) for item in block.items)
    if isinstance(block, Table):
        lines = [
            "| " + " | ".join(plain_md(h) for h in block.header) + " |",
            "|" + "|".join("---:" if r else "---" for r in block.right) + "|",
        ]
        lines += ["| " + " | ".join(_inline_md(c, cell=True) for c in row) + " |" for row in block.rows]
        return "\n".join(lines)
    if isinstance(block, Folded):
        # GitHub folds raw HTML; the pieces inside stay Markdown (a blank line each side). The summary is
        # HTML on the <details> line: escaped as HTML, on one line (a blank line would end the HTML block).
        summary = _one_line(_inline_html(block.summary))
        return f"<details><summary>{summary}</summary>\n\n{markdown(block.blocks)}</details>"
    # the address percent-encoded: a ')' or a space in it would end the link
    return f"![{plain_md(block.title)}]({quote(block.src, safe='/._-~')})"


def markdown(blocks: Sequence[Block]) -> str:
    """The pieces as Markdown, each followed by a blank line."""
    return "".join(_block_md(b) + "\n\n" for b in blocks)


def markdown_lines(blocks: Sequence[Block]) -> "list[str]":
    """:func:`markdown` as lines (no pieces: no lines), for callers that add lines of their own."""
    return markdown(blocks).split("\n")[:-1]


def _inline_text(text: Text) -> str:
    out = []
    for part in _runs(text):
        if isinstance(part, (Code, Strong)):
            out.append(part.text)
        elif isinstance(part, Status):
            out.append(part.status.upper())
        else:
            out.append(part)
    return "".join(out)


def _table_text(table: Table) -> "list[str]":
    rows = [tuple(table.header)] + [tuple(_inline_text(c) for c in row) for row in table.rows]
    widths = [max(len(r[k]) for r in rows) for k in range(len(table.header))]

    def line(cells: "tuple[str, ...]") -> str:
        return "  ".join(
            c.rjust(w) if right else c.ljust(w) for c, w, right in zip(cells, widths, table.right)
        ).rstrip()

    return [line(rows[0])] + [line(r) for r in rows[1:]]


def text_lines(blocks: Sequence[Block], *, notes: bool = False) -> "list[str]":
    """The pieces as plain text for a terminal: tables aligned in columns, statuses as words.

    What a terminal cannot show or would drown in stays out: folded parts,
    pictures, and notes (how a table was computed) unless ``notes``.
    """
    out: "list[str]" = []
    for block in blocks:
        if isinstance(block, Heading):
            out.append(_inline_text(block.text))
        elif isinstance(block, Paragraph) and (notes or not block.note):
            out.append(_inline_text(block.text))
        elif isinstance(block, Bullets):
            out += ["- " + _inline_text(item) for item in block.items]
        elif isinstance(block, Table):
            out += _table_text(block)
    return out


def _block_html(block: Block) -> str:
    if isinstance(block, Heading):
        level = min(6, max(1, block.level - 1))
        return f"<h{level}>{_inline_html(block.text)}</h{level}>"
    if isinstance(block, Paragraph):
        text = _inline_html(block.text)
        return f"<p><em>{text}</em></p>" if block.note else f"<p>{text}</p>"
    if isinstance(block, Bullets):
        return "<ul>" + "".join(f"<li>{_inline_html(item)}</li>" for item in block.items) + "</ul>"
    if isinstance(block, Table):
        # numbers right-aligned, as the Markdown's ---: columns are
        cls = [' class="num"' if i < len(block.right) and block.right[i] else "" for i in range(len(block.header))]
        head = "".join(f"<th{a}>{html.escape(h)}</th>" for h, a in zip(block.header, cls))
        body = "".join(
            "<tr>" + "".join(f"<td{a}>{_inline_html(c)}</td>" for c, a in zip(row, cls)) + "</tr>" for row in block.rows
        )
        return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
    if isinstance(block, Folded):
        inner = "\n".join(_block_html(b) for b in block.blocks)
        return f"<details><summary>{_inline_html(block.summary)}</summary>\n{inner}\n</details>"
    return (
        f'<figure><img src="{html.escape(block.src)}" alt="{html.escape(block.title)}">'
        f"<figcaption>{html.escape(block.title)}</figcaption></figure>"
    )


# figure's margin is the page's: the browser's 40px on each side shrank a 900px picture (blurred text)
_STYLE = (
    "body{font-family:sans-serif;max-width:60em;margin:auto;padding:0 1em}table{border-collapse:collapse}"
    "td,th{border:1px solid #ccc;padding:2px 6px}th{text-align:left}.num{text-align:right}"
    "figure{margin:1.5em 0}figcaption{color:#555;font-size:90%}img{max-width:100%}"
)


def html_page(blocks: Sequence[Block], title: str) -> str:
    """The pieces as one self-contained HTML page (pictures stay files, linked by their addresses)."""
    body = "\n".join(_block_html(b) for b in blocks)
    return (
        f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
        f"<style>{_STYLE}</style></head><body>\n{body}\n</body></html>\n"
    )
