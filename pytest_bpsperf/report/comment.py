"""The pull-request comment: a summary line first, the report collapsed, cut below GitHub's limit.

Made from a results document (``--bpsperf-json``) and the Markdown report of the
same session (``--bpsperf-markdown``) by ``bpsperf comment``; a workflow posts
the body and finds its own comment again by the marker on its first line.
"""

from __future__ import annotations

import re
from typing import Any, Mapping

from ..judge.breakdown import change_phrase
from .blocks import code_md, plain_md
from .markdown import verdicts_of

#: GitHub refuses a comment body of more than 65,536 characters.
GITHUB_COMMENT_LIMIT = 65536

#: The order statuses are named in: what needs a look first.
STATUS_ORDER = ("regression", "inconclusive", "no-baseline", "improvement", "ok")

#: A picture of the report (:mod:`.blocks` writes its title escaped, its address percent-encoded).
_PICTURE = re.compile(r"^!\[((?:\\.|[^\]\\])*)\]\(([^)\s]*)\)$", re.M)
_OPENS, _CLOSES = re.compile(r"^<details>", re.M), re.compile(r"^</details>", re.M)
#: What a marker may be: it goes into an HTML comment (``-->`` would end it) and the summary line.
MARKER = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
#: What a link may be: a web address without what would end the Markdown link around it.
LINK = re.compile(r"https?://[^\s()<>\[\]`\\]+")


def check_marker(marker: str) -> str:
    """``marker`` when it may name a comment (letters, digits, ``._-``), else ValueError naming it."""
    if not MARKER.fullmatch(marker or ""):
        raise ValueError(
            f"--marker {marker!r}: expected letters, digits, '.', '_' and '-' (it names the comment "
            "in an HTML comment and its summary line), such as the runner kind: cpu"
        )
    return marker


def check_link(link: str) -> str:
    """``link`` when it is an http(s) address that a Markdown link can hold, else ValueError naming it."""
    if not LINK.fullmatch(link or ""):
        raise ValueError(
            f"--link {link!r}: expected an http:// or https:// address without spaces, "
            "parentheses, brackets, backticks or angle brackets (the run's artifacts page)"
        )
    return link


def verdict_counts(document: Mapping[str, Any]) -> "dict[str, int]":
    """Status -> number of verdicts of the document (:func:`.markdown.verdicts_of`: one per job), most urgent first."""
    statuses = [v["status"] for v in verdicts_of(document)]
    rank = {status: k for k, status in enumerate(STATUS_ORDER)}
    counts: dict = {}
    for status in sorted(statuses, key=lambda s: (rank.get(s, len(STATUS_ORDER)), s)):
        counts[status] = counts.get(status, 0) + 1
    return counts


def regression_lines(document: Mapping[str, Any]) -> "list[str]":
    """One line per regression that has a breakdown: its test and the part that grew
    (the test as code: head 14.0% slower: compute +1%, push/pull wait +38%, ...)."""
    out = []
    for v in verdicts_of(document):
        if v.get("status") != "regression":
            continue
        phrase = change_phrase(v.get("breakdown"), v.get("change_pct"))
        if phrase:
            out.append(f"{code_md(str(v['nodeid']))}: {plain_md(phrase)}")
    return out


def summary_line(counts: Mapping[str, int]) -> str:
    """``1 regression, 3 ok, 1 inconclusive`` (most urgent first); ``no verdict`` when there is none."""
    return ", ".join(f"{n} {status}" for status, n in counts.items()) if counts else "no verdict"


def comment_body(
    document: Mapping[str, Any],
    markdown: str,
    *,
    marker: str,
    link: "str | None" = None,
    limit: int = GITHUB_COMMENT_LIMIT,
) -> str:
    """The comment: ``<!-- bpsperf:MARKER -->``, the summary, then ``markdown`` in a collapsed block.

    Pictures of the report are files of the runner, which a comment cannot show:
    they become list items that name the file in the artifact. A body longer
    than ``limit`` characters is cut at a line of the report, and says so, with
    ``link`` (the run's artifacts) for the whole report.
    """
    counts = verdict_counts(document)
    check_marker(marker)
    where = f" ([reports and pictures]({check_link(link)}))" if link else ""
    head = f"<!-- bpsperf:{marker} -->\n**bpsperf on `{marker}`: {plain_md(summary_line(counts))}**{where}\n\n"
    grown = regression_lines(document)  # what grew, where the reader looks first
    head += "".join(f"- {line}\n" for line in grown) + ("\n" if grown else "")
    opening, closing = "<details><summary>The report</summary>\n\n", "\n\n</details>\n"
    report = _PICTURE.sub(lambda m: f"- {m.group(1)}: {code_md(m.group(2))}", markdown.strip())
    body = head + opening + report + closing
    if len(body) <= limit:
        return body
    note = f"\n\n*The report is cut here, below GitHub's limit of {GITHUB_COMMENT_LIMIT:,} characters" + (
        f": the whole report is in the [artifacts]({link}).*" if link else ".*"
    )
    room = limit - len(head) - len(opening) - len(closing) - len(note)
    if room <= 0:
        raise ValueError(f"a comment limit of {limit} characters leaves no room for the report")
    cut = report[:room]
    if "\n" in cut:
        cut = cut[: cut.rindex("\n")]
    # close what the cut left open inside the report (its own collapsed blocks), before the note
    while True:
        # the report's own folds open and close at a line's start; a test id inside a code span never does
        unclosed = len(_OPENS.findall(cut)) - len(_CLOSES.findall(cut))
        inner = "\n\n</details>" * max(0, unclosed)
        if len(cut) + len(inner) <= room or "\n" not in cut:
            break
        cut = cut[: cut.rindex("\n")]
    return head + opening + cut + inner + note + closing
