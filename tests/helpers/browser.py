"""Headless Chromium driven over the DevTools protocol, without network: open a page, ask it, look at it.

Debian's ``chromium`` is started with a new empty profile, no first-run, sync,
component or background traffic, and ``--remote-debugging-port=0``: it picks a
free loopback port and writes it to ``DevToolsActivePort`` in the profile. One
page target is made over its HTTP endpoint, and driven over that target's
websocket (``websocket-client``): Page, Runtime and Log events are kept, so a
test sees every console message, uncaught exception and failed load. The
browser runs in a process group of its own and is ended by that group's id.
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
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-extensions", "--disable-default-apps", "--hide-scrollbars", "--mute-audio")

#: Seconds to wait for the browser to start, or for one answer of it (a bound against hanging, not a check).
WAIT_S = 60.0


def chromium_or_skip() -> str:
    """Debian's ``chromium`` and the websocket client, or the test skips naming what it needs."""
    exe = os.environ.get("BPSPERF_CHROMIUM") or shutil.which("chromium")
    if exe is None:
        pytest.skip("needs Debian's chromium (apt-get install -y chromium; .ci/run installs it) "
                    "or BPSPERF_CHROMIUM naming a Chromium binary")
    pytest.importorskip("websocket", reason="needs websocket-client (pip install -e '.[test]')")
    return exe


class Chromium:
    """A headless Chromium and one page of it: ``open``, ``evaluate``, ``screenshot``, then ``close``."""

    def __init__(self, exe: str, width: int = 1280, height: int = 900) -> None:
        import websocket

        self.profile = Path(tempfile.mkdtemp(prefix="bpsperf-chromium-"))
        self.log = open(self.profile.parent / f"{self.profile.name}.log", "w+b")
        self.proc = subprocess.Popen(
            [exe, *FLAGS, f"--user-data-dir={self.profile}", "--remote-debugging-address=127.0.0.1",
             "--remote-debugging-port=0", f"--window-size={width},{height}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        self.events: List[Dict[str, Any]] = []
        self._id = 0
        try:
            port = self._port()
            request = urllib.request.Request(f"http://127.0.0.1:{port}/json/new?about:blank", method="PUT")
            with urllib.request.urlopen(request, timeout=WAIT_S) as answer:
                target = json.loads(answer.read())
            # suppress_origin: Chromium refuses a websocket whose Origin it was not told to allow
            self.ws = websocket.create_connection(target["webSocketDebuggerUrl"], timeout=WAIT_S,
                                                  suppress_origin=True)
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
        raise RuntimeError(f"chromium wrote no DevToolsActivePort (exit {self.proc.poll()}): "
                           f"{self.log.read()[-2000:].decode(errors='replace')}")

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
