"""The page checks of the browser tests (``helpers/browser.py``) can fail: a missing picture, a script error.

The browser tests themselves (``bpsperf report``'s pages of a session) are in ``tests/pytester/test_browser.py``.
"""

from __future__ import annotations

import pytest

from helpers.browser import check_page, look


def test_the_browser_sees_a_missing_picture_and_a_script_error(chromium, tmp_path):
    # the page checks can fail: a page with a picture that is not there and a script that fails
    page = tmp_path / "broken.html"
    page.write_text(
        '<!DOCTYPE html><html><body><img src="bpsperf-img/none.png" alt="none">'
        "<table><thead><tr><th>a</th></tr></thead><tbody></tbody></table>"
        "<script>console.error('drawn wrong'); undefined_function();</script></body></html>"
    )
    facts = look(chromium, page, tmp_path / "broken.png")
    assert facts["images"][0]["natural"] == [0, 0] and facts["tables"][0]["rows"] == 0
    levels = [level for level, _ in facts["console"]]
    texts = " | ".join(text for _, text in facts["console"])
    assert levels.count("error") >= 3, facts["console"]  # the failed load, console.error, the exception
    assert "none.png" in texts and "drawn wrong" in texts and "undefined_function" in texts
    with pytest.raises(AssertionError):
        check_page(facts, pictures=1, tables=1)
