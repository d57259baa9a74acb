"""Headless Chromium with WebGPU on its software adapter (SwiftShader), driven through the
DevTools protocol over a pipe, and pages served from localhost: what ``tests/test_export_browser.py``
and ``benchmarks/browser_argmax.py`` run exported modules in. Not a test module.

No dependency beyond the standard library: Chromium's ``--remote-debugging-pipe`` speaks the
protocol's JSON messages, each ended by a NUL byte, on file descriptors 3 (commands in) and 4
(replies out), so no websocket client is needed. The browser is Debian's ``chromium`` package
(``scripts/setup.sh`` installs it), or ``DMLGPU_CHROMIUM``; it starts with a fresh profile, and
every network service of its own turned off.
"""

from __future__ import annotations

import contextlib
import fcntl
import http.server
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

#: WebGPU on SwiftShader, headless, and nothing that reaches the network.
FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu-sandbox",
    "--enable-unsafe-webgpu", "--enable-unsafe-swiftshader", "--use-webgpu-adapter=swiftshader",
    "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run",
    "--disable-default-apps", "--disable-extensions", "--mute-audio",
]


def find_chromium() -> str | None:
    """``DMLGPU_CHROMIUM``, else the first of Debian's and the usual names on PATH."""
    named = os.environ.get("DMLGPU_CHROMIUM")
    if named:
        return named
    return next((path for name in ("chromium", "chromium-browser", "google-chrome") if (path := shutil.which(name))),
                None)


class BrowserError(RuntimeError):
    """The browser would not start, went away, or a page's script threw."""


class Site:
    """Files served from memory on 127.0.0.1 (a secure context, as WebGPU asks), by path."""

    TYPES = {".js": "text/javascript", ".html": "text/html", "": "text/html", ".json": "application/json"}

    def __init__(self):
        self.files: dict[str, bytes] = {}
        files = self.files

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 (the standard library's name)
                body = files.get(self.path.split("?")[0])
                if body is None:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Type", Site.TYPES.get(os.path.splitext(self.path)[1],
                                                                "application/octet-stream"))
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Cache-Control", "no-store")
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def add(self, path: str, body: bytes | str) -> str:
        """Serve ``body`` at ``path``; its URL."""
        self.files[path] = body.encode() if isinstance(body, str) else body
        return self.url + path

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class Chromium:
    """One headless Chromium with one page open, driven over the DevTools pipe."""

    def __init__(self, executable: str, extra_flags=(), timeout: float = 60):
        self.profile = tempfile.mkdtemp(prefix="dmlgpu-chromium-")
        commands_in, commands_out = os.pipe()
        replies_in, replies_out = os.pipe()
        # fds 3 and 4 in the browser, wired by a Python that then execs it (no preexec_fn, unsafe
        # in a process with threads; dash's redirections take one digit); above 9 first, so that
        # neither dup2 clobbers the other
        high_in, high_out = fcntl.fcntl(commands_in, fcntl.F_DUPFD, 10), fcntl.fcntl(replies_out, fcntl.F_DUPFD, 10)
        wire = (f"import os, sys; os.dup2({high_in}, 3); os.dup2({high_out}, 4); os.close({high_in}); "
                f"os.close({high_out}); os.execvp(sys.argv[1], sys.argv[1:])")
        self.log = tempfile.TemporaryFile()
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-c", wire, executable, *FLAGS, *extra_flags, f"--user-data-dir={self.profile}",
                 "--remote-debugging-pipe"],
                pass_fds=(high_in, high_out), stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log)
        except OSError as err:
            shutil.rmtree(self.profile, ignore_errors=True)
            raise BrowserError(f"{executable} did not start: {err}") from None
        finally:
            for fd in (commands_in, replies_out, high_in, high_out):
                os.close(fd)
        self._out, self._in = os.fdopen(commands_out, "wb"), os.fdopen(replies_in, "rb", buffering=0)
        self._buffer, self._next = b"", 0
        self.events: list[dict] = []
        self.timeout = timeout
        try:
            target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
            self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
            self.call("Page.enable", session=self.session)
        except BrowserError:
            self.close()
            raise

    def _message(self, deadline: float) -> dict:
        while b"\0" not in self._buffer:
            if time.monotonic() > deadline:
                raise BrowserError("the browser did not answer in time")
            ready = _readable(self._in, deadline)
            chunk = os.read(self._in.fileno(), 1 << 20) if ready else b""
            if ready and not chunk:
                raise BrowserError(f"the browser went away (exit status {self.process.poll()}): {self.log_tail()}")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def call(self, method: str, params: dict | None = None, session: str | None = None, timeout=None) -> dict:
        """Send one command and wait for its reply (the events in between are kept in ``events``)."""
        self._next += 1
        command = {"id": self._next, "method": method, "params": params or {}}
        if session:
            command["sessionId"] = session
        try:
            self._out.write(json.dumps(command).encode() + b"\0")
            self._out.flush()
        except OSError as err:
            raise BrowserError(f"the browser went away: {err}; {self.log_tail()}") from None
        reply = self._until(lambda m: m.get("id") == self._next, timeout)
        if "error" in reply:
            raise BrowserError(f"{method}: {reply['error'].get('message')}")
        return reply["result"]

    def _until(self, wanted, timeout=None) -> dict:
        """The first message ``wanted`` accepts, among the events kept or read from now on."""
        for i, event in enumerate(self.events):
            if wanted(event):
                return self.events.pop(i)
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            message = self._message(deadline)
            if wanted(message):
                return message
            if "method" in message:
                self.events = self.events[-100:] + [message]

    def goto(self, url: str) -> None:
        """Open ``url`` in the page and wait for its load event."""
        self.events = []
        self.call("Page.navigate", {"url": url}, self.session)
        self._until(lambda m: m.get("method") == "Page.loadEventFired" and m.get("sessionId") == self.session)

    def evaluate(self, expression: str, timeout: float | None = None):
        """The value of a JavaScript expression in the page (a promise is awaited), as JSON; a
        ``BrowserError`` with the exception's text if it throws."""
        result = self.call("Runtime.evaluate", {"expression": expression, "awaitPromise": True, "returnByValue": True},
                           self.session, timeout)
        if "exceptionDetails" in result:
            details = result["exceptionDetails"]
            raise BrowserError(details.get("exception", {}).get("description") or details.get("text"))
        return result["result"].get("value")

    def log_tail(self, lines: int = 8) -> str:
        self.log.seek(0)
        text = [line for line in self.log.read().decode(errors="replace").splitlines() if "dbus" not in line]
        return " | ".join(text[-lines:])

    def close(self) -> None:
        with contextlib.suppress(BrowserError, OSError, ValueError):
            self.call("Browser.close", timeout=5)
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        for f in (self._out, self._in, self.log):
            with contextlib.suppress(OSError):
                f.close()
        shutil.rmtree(self.profile, ignore_errors=True)


def _readable(f, deadline: float) -> bool:
    import select

    ready, _, _ = select.select([f], [], [], max(0.0, min(1.0, deadline - time.monotonic())))
    return bool(ready)
