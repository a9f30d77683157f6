"""Shared helpers of the test suite: the import path, the environment, local
HTTP servers (a webhook receiver and a scripted stub), a recording client."""

from __future__ import annotations

import http.server
import json
import os
import queue
import socketserver
import sys
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Tuple, TypeVar

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "src"))

import treasury  # noqa: E402
from treasury._base import _RawResponse  # noqa: E402

OPENAPI_PATH = os.path.normpath(os.path.join(ROOT, "..", "..", "http", "openapi.json"))

T = TypeVar("T")


def load_openapi() -> Dict[str, Any]:
    with open(OPENAPI_PATH, encoding="utf-8") as f:
        return json.load(f)


def server_env() -> Tuple[str, str]:
    """TREASURY_BASE_URL and TREASURY_OPERATOR_KEY; missing ones fail the run (never skip)."""
    base_url = os.environ.get("TREASURY_BASE_URL", "").strip()
    operator_key = os.environ.get("TREASURY_OPERATOR_KEY", "").strip()
    missing = [n for n, v in (("TREASURY_BASE_URL", base_url), ("TREASURY_OPERATOR_KEY", operator_key)) if not v]
    if missing:
        raise RuntimeError(
            "the integration tests need a running `treasury serve` (sandbox, TREASURY_WEBHOOK_ALLOW_PRIVATE=true): "
            "set " + " and ".join(missing) + " (e.g. TREASURY_BASE_URL=http://127.0.0.1:8080/v1)")
    return base_url, operator_key


# -- a client that records every exchange -------------------------------------

class Exchange:
    """One HTTP exchange the client made."""

    def __init__(self, method: str, url: str, headers: Dict[str, str], body: Optional[bytes],
                 status: Optional[int], response_headers: Dict[str, str],
                 response_body: Optional[bytes] = None) -> None:
        self.method = method
        self.url = url
        self.headers = {k.lower(): v for k, v in headers.items()}
        self.body = body
        self.status = status
        self.response_headers = response_headers
        self.response_body = response_body

    @property
    def path(self) -> str:
        from urllib.parse import urlsplit
        return urlsplit(self.url).path

    def __repr__(self) -> str:
        return f"<{self.method} {self.url} -> {self.status}>"


EXCHANGES: List[Exchange] = []
_EXCHANGES_LOCK = threading.Lock()


class RecordingTreasury(treasury.Treasury):
    """A :class:`treasury.Treasury` that records each exchange in :data:`EXCHANGES`."""

    def _send(self, method, url, headers, data, timeout):  # type: ignore[no-untyped-def]
        try:
            resp: _RawResponse = super()._send(method, url, headers, data, timeout)
        except treasury.APIConnectionError:
            with _EXCHANGES_LOCK:
                EXCHANGES.append(Exchange(method, url, dict(headers), data, None, {}))
            raise
        with _EXCHANGES_LOCK:
            EXCHANGES.append(Exchange(method, url, dict(headers), data, resp.status, dict(resp.headers),
                                      resp.body))
        return resp


def exchanges_since(mark: int) -> List[Exchange]:
    with _EXCHANGES_LOCK:
        return list(EXCHANGES[mark:])


BUSY = (429, 503)
"""Answers of a server busy for now: the client sends the same request again."""


def answered_since(mark: int) -> List[Exchange]:
    """The exchanges since ``mark`` less the attempts a busy server refused for now
    (429, 503), which the client retried unchanged: one per call that was answered."""
    return [x for x in exchanges_since(mark) if x.status not in BUSY]


def exchange_mark() -> int:
    with _EXCHANGES_LOCK:
        return len(EXCHANGES)


# -- polling -----------------------------------------------------------------

def poll(fetch: Callable[[], T], until: Callable[[T], bool], *, timeout: float = 15.0,
         interval: float = 0.2, what: str = "condition") -> T:
    """Call ``fetch`` until ``until(result)``; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = fetch()
        if until(value):
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}; last value: {value!r}")
        time.sleep(interval)


# -- local HTTP servers ---------------------------------------------------------

class _Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


class Received:
    """One request a local server received."""

    def __init__(self, method: str, path: str, headers: List[Tuple[str, str]], body: bytes) -> None:
        self.method = method
        self.path = path
        self.headers = headers  # as received: (name, value) pairs
        self.body = body

    def header(self, name: str) -> Optional[str]:
        for k, v in self.headers:
            if k.lower() == name.lower():
                return v
        return None


class LocalServer:
    """A threaded HTTP server on 127.0.0.1 whose answers come from ``respond``."""

    def __init__(self, respond: Callable[[Received], Tuple[int, Dict[str, str], bytes]]) -> None:
        self.received: "queue.Queue[Received]" = queue.Queue()
        self.all: List[Received] = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                rec = Received(self.command, self.path, list(self.headers.items()), body)
                outer.all.append(rec)
                outer.received.put(rec)
                status, headers, out = respond(rec)
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            do_GET = do_POST = do_PATCH = do_DELETE = _handle

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

        self.httpd = _Server(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self) -> "LocalServer":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def json_answer(status: int, body: Any, headers: Optional[Dict[str, str]] = None) -> Tuple[int, Dict[str, str], bytes]:
    h = {"Content-Type": "application/json"}
    h.update(headers or {})
    return status, h, json.dumps(body).encode()


def scripted(*answers: Tuple[int, Dict[str, str], bytes]) -> Callable[[Received], Tuple[int, Dict[str, str], bytes]]:
    """A ``respond`` giving the answers in turn, then repeating the last."""
    remaining = list(answers)

    def respond(_: Received) -> Tuple[int, Dict[str, str], bytes]:
        return remaining.pop(0) if len(remaining) > 1 else remaining[0]

    return respond
