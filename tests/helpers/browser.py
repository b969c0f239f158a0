"""Headless Chromium driven over the DevTools protocol, without network: open a page, ask it, look at it.

Debian's ``chromium`` is started with a new empty profile, no first-run, sync,
component or background traffic, and ``--remote-debugging-port=0``: it picks a
free loopback port and writes it to ``DevToolsActivePort`` in the profile. One
page target is made over its HTTP endpoint, and driven over that target's
websocket (``websocket-client``): Page, Runtime and Log events are kept, so a
test sees every console message, uncaught exception and failed load. The
browser runs in a process group of its own and is ended by that group's id.

``look`` reads what a report page tells of itself, ``check_page`` holds it to what a report must be.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest

#: The flags of a headless browser that talks to nothing but the page it is given.
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--disable-default-apps",
    "--hide-scrollbars",
    "--mute-audio",
)

#: Seconds to wait for the browser to start, or for one answer of it (a bound against hanging, not a check).
WAIT_S = 60.0


def chromium_or_skip() -> str:
    """Debian's ``chromium`` and the websocket client, or the test skips naming what it needs."""
    exe = os.environ.get("BPSPERF_CHROMIUM") or shutil.which("chromium")
    if exe is None:
        pytest.skip(
            "needs Debian's chromium (apt-get install -y chromium; .ci/run installs it) "
            "or BPSPERF_CHROMIUM naming a Chromium binary"
        )
    pytest.importorskip("websocket", reason="needs websocket-client (pip install -e '.[test]')")
    return exe


class Chromium:
    """A headless Chromium and one page of it: ``open``, ``evaluate``, ``screenshot``, then ``close``."""

    def __init__(self, exe: str, width: int = 1280, height: int = 900) -> None:
        import websocket

        self.profile = Path(tempfile.mkdtemp(prefix="bpsperf-chromium-"))
        self.log = open(self.profile.parent / f"{self.profile.name}.log", "w+b")
        self.proc = subprocess.Popen(
            [
                exe,
                *FLAGS,
                f"--user-data-dir={self.profile}",
                "--remote-debugging-address=127.0.0.1",
                "--remote-debugging-port=0",
                f"--window-size={width},{height}",
                "about:blank",
            ],
            stdin=subprocess.DEVNULL,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.events: List[Dict[str, Any]] = []
        self._id = 0
        try:
            port = self._port()
            request = urllib.request.Request(f"http://127.0.0.1:{port}/json/new?about:blank", method="PUT")
            with urllib.request.urlopen(request, timeout=WAIT_S) as answer:
                target = json.loads(answer.read())
            # suppress_origin: Chromium refuses a websocket whose Origin it was not told to allow
            self.ws = websocket.create_connection(target["webSocketDebuggerUrl"], timeout=WAIT_S, suppress_origin=True)
            for domain in ("Page", "Runtime", "Log"):
                self.send(f"{domain}.enable")
        except BaseException:
            self.close()
            raise

    def _port(self) -> int:
        """The port Chromium chose, from its profile; fails with the end of its output if it died."""
        marker = self.profile / "DevToolsActivePort"
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                break
            if marker.exists() and marker.read_text().strip():
                return int(marker.read_text().split()[0])
            time.sleep(0.1)
        self.log.seek(0)
        raise RuntimeError(
            f"chromium wrote no DevToolsActivePort (exit {self.proc.poll()}): "
            f"{self.log.read()[-2000:].decode(errors='replace')}"
        )

    def send(self, method: str, **params: Any) -> Dict[str, Any]:
        """One DevTools command; its result. Events that come before the answer are kept in ``events``."""
        self._id += 1
        self.ws.send(json.dumps({"id": self._id, "method": method, "params": params}))
        while True:
            message = json.loads(self.ws.recv())
            if message.get("id") == self._id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})
            self.events.append(message)

    def _wait_for(self, method: str) -> Dict[str, Any]:
        for event in self.events:
            if event.get("method") == method:
                return event
        while True:
            message = json.loads(self.ws.recv())
            self.events.append(message)
            if message.get("method") == method:
                return message

    def open(self, url: str) -> None:
        """Go to ``url`` and wait for its load event (every picture loaded or failed by then)."""
        self.events.clear()
        answer = self.send("Page.navigate", url=url)
        if answer.get("errorText"):
            raise RuntimeError(f"cannot open {url}: {answer['errorText']}")
        self._wait_for("Page.loadEventFired")

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (a promise is awaited)."""
        result = self.send("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"the page's script failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    def console(self) -> "list[tuple[str, str]]":
        """(level, text) of every console message, uncaught exception and browser log entry since ``open``."""
        out = []
        for event in self.events:
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.consoleAPICalled":
                text = " ".join(str(a.get("value", a.get("description", ""))) for a in params.get("args", []))
                out.append((params.get("type", "log"), text))
            elif method == "Runtime.exceptionThrown":
                details = params.get("exceptionDetails", {})
                out.append(("error", details.get("exception", {}).get("description") or details.get("text", "")))
            elif method == "Log.entryAdded":
                entry = params.get("entry", {})
                out.append((entry.get("level", "info"), f"{entry.get('text', '')} {entry.get('url', '')}".strip()))
        return out

    def screenshot(self, path: Path, *, full_page: bool = True) -> Path:
        """A PNG of the page (all of it with ``full_page``) at ``path``."""
        params: Dict[str, Any] = {"format": "png", "captureBeyondViewport": full_page}
        if full_page:
            size = self.send("Page.getLayoutMetrics")["cssContentSize"]
            params["clip"] = {"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1}
        path.write_bytes(base64.b64decode(self.send("Page.captureScreenshot", **params)["data"]))
        return path

    def close(self) -> None:
        """End the browser (its whole process group) and remove its profile."""
        ws: Optional[Any] = getattr(self, "ws", None)
        if ws is not None:
            try:
                self.send("Browser.close")
            except Exception:  # noqa: BLE001 - it may close before it answers
                pass
            ws.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)  # its renderers and helpers too, by the group's id
        except ProcessLookupError:
            pass
        self.proc.wait()
        self.log.close()
        os.unlink(self.log.name)
        shutil.rmtree(self.profile, ignore_errors=True)


#: What the page tells of itself: its pictures (loaded?), its tables (header, rows), its width.
PAGE_FACTS = """(() => {
  const box = e => e.getBoundingClientRect();
  return {
    title: document.title,
    headings: [...document.querySelectorAll('h1, h2, h3')].map(h => h.textContent),
    images: [...document.images].map(i => ({src: i.getAttribute('src'), alt: i.alt, complete: i.complete,
                                            natural: [i.naturalWidth, i.naturalHeight],
                                            shown: [box(i).width, box(i).height]})),
    tables: [...document.querySelectorAll('table')].map(t => ({
      header: t.tHead ? [...t.tHead.rows[0].cells].map(c => c.textContent) : [],
      rows: t.tBodies.length ? t.tBodies[0].rows.length : 0,
      cells: t.tBodies.length ? [...t.tBodies[0].rows].map(r => r.cells.length) : [],
      align: t.tBodies.length && t.tBodies[0].rows.length
        ? [...t.tBodies[0].rows[0].cells].map(c => getComputedStyle(c).textAlign) : [],
      width: box(t).width})),
    viewport: window.innerWidth,
    page_width: document.documentElement.scrollWidth,
  };
})()"""


def look(chromium: Chromium, page, shot) -> dict:
    """What ``page`` (a path) tells of itself in ``chromium`` (:data:`PAGE_FACTS`, its console); a shot at ``shot``."""
    chromium.open(page.as_uri())
    facts = chromium.evaluate(PAGE_FACTS)
    facts["console"] = chromium.console()
    chromium.screenshot(shot)
    return facts


def check_page(facts: dict, *, pictures: int, tables: int) -> None:
    """Fails unless the page has these many pictures, each loaded at its own size, and tables, each with rows under
    its header; nothing runs out sideways and the console holds no error or warning."""
    images = facts["images"]
    assert len(images) == pictures, [i["src"] for i in images]
    for image in images:
        assert image["complete"] and image["natural"][0] > 0 and image["natural"][1] > 0, image  # it loaded
        # shown at its own size in a 1280-pixel window: not shrunk, so its text stays sharp
        assert image["shown"] == image["natural"], image
    assert len(facts["tables"]) == tables, facts["tables"]
    for table in facts["tables"]:
        assert table["header"] and table["rows"] > 0, table
        assert set(table["cells"]) == {len(table["header"])}, table  # every row as wide as its header
    assert facts["page_width"] <= facts["viewport"], "the page runs out sideways"
    assert [m for m in facts["console"] if m[0] in ("error", "warning", "assert")] == [], facts["console"]
