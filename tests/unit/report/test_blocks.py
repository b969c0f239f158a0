"""``report/blocks.py``: pieces of a report as Markdown and HTML, and Markdown that a test id cannot break.

Read back with GitHub's rules (CommonMark with GFM tables): a ``|`` splits a cell
unless a backslash escapes it (inside code spans too), a backtick string opens a
code span that only a string of the same length closes, raw HTML is anything
outside code spans that starts with ``<`` unescaped. The reports, the job summary
and the pull-request comment of a session with such an id are in
``tests/pytester/test_pictures_exports.py::test_a_test_id_cannot_break_the_report_the_summary_or_the_comment``.
"""

from __future__ import annotations

import re

import pytest

from helpers.markdown_check import NASTY_ID, cell_unescape, code_spans, raw_html, split_row, unescaped_pipes
from pytest_bpsperf.report import blocks
from pytest_bpsperf.report.blocks import (
    Bullets,
    Code,
    Folded,
    Heading,
    Image,
    Paragraph,
    Strong,
    Table,
    code_md,
    markdown,
    plain_md,
)

NASTY = [
    NASTY_ID,
    "t[``|``]",
    "t[\\|]",
    "t[\\\\|x]",
    "t[a\nb]",
    "t[[x](https://evil.example)]",
    "`",
    "t[ **b** _i_ ]",
    "t[&lt;img&gt;]",
]


@pytest.mark.parametrize("nodeid", NASTY)
def test_a_code_span_gives_back_its_text_in_a_paragraph(nodeid):
    md = markdown([Paragraph(("test ", Code(nodeid), " done"))]).strip()
    assert "\n" not in md
    spans, rest = code_spans(md)
    assert spans == [nodeid.replace("\n", " ")] and raw_html(rest) == []


@pytest.mark.parametrize("nodeid", NASTY)
def test_a_code_span_stays_in_its_cell(nodeid):
    md = markdown([Table(("test", "verdict"), ((Code(nodeid), "ok"), ("a|b\\", Strong("x|y"))), (False, False))])
    header, rule, row, plain = md.strip().split("\n")
    assert unescaped_pipes(header) == unescaped_pipes(row) == unescaped_pipes(plain) == 3
    cells = split_row(row)[1:-1]
    spans, rest = code_spans(cell_unescape(cells[0].strip()))
    # the text; only an odd run of backslashes before a '|' shows one more (GFM cannot write it in a cell)
    expected = re.sub(r"(\\*)\|", lambda m: m.group(1) + "\\" * (len(m.group(1)) % 2) + "|", nodeid)
    assert spans[0] == expected.replace("\n", " ") and raw_html(rest) == []
    assert cells[1].strip() == "ok"


@pytest.mark.parametrize("nodeid", NASTY)
def test_a_fold_is_closed_where_the_report_closes_it(nodeid):
    md = markdown(
        [
            Folded(("pairs of ", Code(nodeid)), (Table(("pair",), (("1",),), (True,)),)),
            Heading(3, ("after ", Code(nodeid))),
        ]
    )
    lines = md.split("\n")
    assert [line for line in lines if line.startswith("<details>")] == [lines[0]]
    assert [i for i, line in enumerate(lines) if line.startswith("</details>")] == [lines.index("</details>")]
    summary = re.fullmatch(r"<details><summary>(.*)</summary>", lines[0]).group(1)
    assert raw_html(summary) == ["code", "/code"]  # the id escaped as HTML inside it
    assert lines[-3].startswith("### after ")


def test_plain_text_shows_literally():
    md = plain_md("a|b `c` <img src=x> [l](u) **b** _i_ omp_threads \\ & ~s~")
    assert raw_html(md) == [] and unescaped_pipes(md) == 0 and code_spans(md)[0] == []
    assert "omp_threads" in md  # inside a word '_' is no emphasis: left as it is
    assert plain_md("1|2\nnext") == "1\\|2 next"


def test_a_paragraph_or_item_that_looks_like_a_block_start_stays_text():
    assert markdown([Paragraph("# x"), Paragraph("1. y"), Bullets(("- z",))]) == "\\# x\n\n1\\. y\n\n- \\- z\n\n"


def test_a_picture_cannot_end_its_link_early():
    md = markdown([Image("steps: t[a](b)]", "bpsperf-img/steps-t (1).png")]).strip()
    assert md == "![steps: t\\[a\\](b)\\]](bpsperf-img/steps-t%20%281%29.png)"


def test_code_md_fences():
    assert code_md("a") == "`a`" and code_md("a`b") == "``a`b``" and code_md("`") == "`` ` ``"
    assert code_md("") == ""


def test_text_tables_align_their_columns_and_write_statuses_as_words():
    from pytest_bpsperf.report.blocks import Code, Paragraph, Status, Table, text_lines

    table = Table(
        ("test", "verdict", "img/s"),
        ((Code("t.py::a"), Status("ok"), "10.0"), (Code("t.py::long_name"), Status("inconclusive"), "9.5")),
        (False, False, True),
    )
    lines = text_lines([table, Paragraph("how it was computed", note=True)])
    assert lines == [
        "test             verdict       img/s",
        "t.py::a          OK             10.0",
        "t.py::long_name  INCONCLUSIVE    9.5",
    ]
    assert text_lines([Paragraph("how", note=True)], notes=True) == ["how"]


def test_pieces_write_down_as_markdown_and_html():
    page = [
        blocks.Heading(2, "t"),
        blocks.Paragraph(blocks.Strong("2 ok")),
        blocks.Bullets(("a", (blocks.Strong("b"), ": ", blocks.Code("c<d>"))), loose=True),
        blocks.Table(("x", "n"), (((blocks.Code("id"), " (head)"), "1.0"),), (False, True)),
        blocks.Folded(("pairs of ", blocks.Code("a&b")), (blocks.Paragraph("m", note=True),)),
        blocks.Image("pic", "bpsperf-img/p.png"),
    ]
    assert blocks.markdown(page) == (
        "## t\n\n**2 ok**\n\n- a\n\n- **b**: `c<d>`\n\n| x | n |\n|---|---:|\n| `id` (head) | 1.0 |\n\n"
        "<details><summary>pairs of <code>a&amp;b</code></summary>\n\n_m_\n\n</details>\n\n"
        "![pic](bpsperf-img/p.png)\n\n"
    )
    html = blocks.html_page(page, "report")
    assert "<h1>t</h1>" in html and "<li><strong>b</strong>: <code>c&lt;d&gt;</code></li>" in html
    assert '<tr><td><code>id</code> (head)</td><td class="num">1.0</td></tr>' in html
    assert '<thead><tr><th>x</th><th class="num">n</th></tr></thead>' in html  # numbers right, as in Markdown
    assert '<img src="bpsperf-img/p.png" alt="pic">' in html and "<p><em>m</em></p>" in html
