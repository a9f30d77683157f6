"""The HTTP transport: requests, retries, idempotency keys and error mapping."""

from __future__ import annotations

import email.utils
import http.client
import json
import logging
import random
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from typing import Any, Dict, List, Mapping, Optional, Tuple

from ._exceptions import (
    APIConnectionError,
    APIError,
    APITimeoutError,
    error_class_for,
)
from ._types import NOT_GIVEN, NotGiven, RequestOptions
from ._version import __version__

__all__ = ["BaseClient", "DEFAULT_BASE_URL", "DEFAULT_MAX_RETRIES", "DEFAULT_TIMEOUT"]

log = logging.getLogger("treasury")

DEFAULT_BASE_URL = "http://localhost:8080/v1"
DEFAULT_MAX_RETRIES = 2
DEFAULT_TIMEOUT = 60.0
INITIAL_RETRY_DELAY = 0.5
MAX_RETRY_DELAY = 8.0
# A Retry-After above this is not waited for in full (the wait is capped here).
MAX_RETRY_AFTER = 60.0


def _parse_retry_after(value: Optional[str]) -> Optional[float]:
    """Seconds to wait from a ``Retry-After`` header (delta-seconds or an HTTP date)."""
    if value is None:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        if when is None:
            return None
        seconds = when.timestamp() - time.time()
    if seconds != seconds or seconds < 0:  # NaN, or in the past
        return 0.0
    return seconds


class _RawResponse:
    """One HTTP answer: status, headers (lower-cased names) and body bytes."""

    __slots__ = ("status", "headers", "body")

    def __init__(self, status: int, headers: Dict[str, str], body: bytes) -> None:
        self.status = status
        self.headers = headers
        self.body = body


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Redirects are returned, not followed: an API answer is never a redirect."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):  # type: ignore[no-untyped-def]
        return None


class BaseClient:
    """Sends requests to the API; resources call :meth:`_request`."""

    api_key: str
    base_url: str
    max_retries: int
    timeout: float

    def __init__(
        self,
        *,
        api_key: str,
        base_url: str,
        max_retries: int,
        timeout: float,
        default_headers: Optional[Mapping[str, str]],
    ) -> None:
        if max_retries < 0:
            raise ValueError("max_retries must be 0 or more")
        self.api_key = api_key
        self.base_url = base_url.rstrip("/")
        self.max_retries = max_retries
        self.timeout = timeout
        self.default_headers: Dict[str, str] = dict(default_headers or {})
        self._opener = urllib.request.build_opener(_NoRedirect())

    # -- the request loop -------------------------------------------------

    def _request(
        self,
        method: str,
        path: str,
        *,
        query: Optional[Mapping[str, Any]] = None,
        body: Optional[Mapping[str, Any]] = None,
        idempotency_key: Optional[str] = None,
        options: Optional[RequestOptions] = None,
        accept: str = "application/json",
    ) -> Any:
        """Send one API call, retrying as API.md §11 says; return the decoded answer.

        A JSON answer is returned as a dict, any other as text (``str``).
        """
        opts: RequestOptions = options or {}
        url = self.base_url + path
        q = _encode_query(query)
        if q:
            url += "?" + q
        headers: Dict[str, str] = {
            "Authorization": f"Bearer {self.api_key}",
            "Accept": accept,
            "User-Agent": f"treasury-python/{__version__}",
        }
        headers.update(self.default_headers)
        headers.update(opts.get("extra_headers") or {})
        if opts.get("request_id"):
            headers["X-Request-Id"] = str(opts["request_id"])
        data: Optional[bytes] = None
        if method in ("POST", "PATCH", "PUT"):
            data = json.dumps(dict(body or {}), separators=(",", ":")).encode("utf-8")
            headers["Content-Type"] = "application/json"
        if method == "POST":
            # One key for the call, the same on every retry of it.
            headers["Idempotency-Key"] = idempotency_key or self._new_idempotency_key()
        max_retries = opts.get("max_retries", self.max_retries)
        timeout = opts.get("timeout", self.timeout)

        attempt = 0
        while True:
            try:
                resp = self._send(method, url, headers, data, timeout)
            except APIConnectionError as exc:
                if attempt >= max_retries:
                    raise
                delay = self._backoff(attempt)
                log.info("Retrying %s %s in %.2f s after %s", method, path, delay, exc.message)
                time.sleep(delay)
                attempt += 1
                continue
            if 200 <= resp.status < 300:
                return _decode(resp)
            err = _make_error(resp)
            if attempt < max_retries and _should_retry(resp, err):
                delay = self._retry_delay(attempt, resp)
                log.info(
                    "Retrying %s %s in %.2f s after %s %s (request_id %s)",
                    method, path, delay, resp.status, err.code, err.request_id,
                )
                time.sleep(delay)
                attempt += 1
                continue
            raise err

    def _send(
        self, method: str, url: str, headers: Mapping[str, str], data: Optional[bytes], timeout: float
    ) -> _RawResponse:
        """Perform one HTTP exchange. Raises :class:`APIConnectionError` when no answer came."""
        req = urllib.request.Request(url, data=data, headers=dict(headers), method=method)
        try:
            with self._opener.open(req, timeout=timeout) as r:
                return _RawResponse(r.status, _lower(r.headers.items()), r.read())
        except urllib.error.HTTPError as e:
            try:
                body = e.read()
            except (OSError, http.client.HTTPException):
                body = b""
            finally:
                e.close()
            return _RawResponse(e.code, _lower(e.headers.items() if e.headers else []), body)
        except (socket.timeout, TimeoutError) as e:
            raise APITimeoutError(f"{method} {url}: no answer within {timeout} s") from e
        except urllib.error.URLError as e:
            if isinstance(e.reason, (socket.timeout, TimeoutError)):
                raise APITimeoutError(f"{method} {url}: no answer within {timeout} s") from e
            raise APIConnectionError(f"{method} {url}: {e.reason}") from e
        except (OSError, http.client.HTTPException) as e:
            raise APIConnectionError(f"{method} {url}: {e!r}") from e

    # -- retry policy -----------------------------------------------------

    @staticmethod
    def _new_idempotency_key() -> str:
        return f"py-{uuid.uuid4()}"

    @staticmethod
    def _backoff(attempt: int) -> float:
        """Exponential backoff from 0.5 s, capped at 8 s, with up to 25 % jitter off."""
        delay: float = min(INITIAL_RETRY_DELAY * 2.0 ** attempt, MAX_RETRY_DELAY)
        return delay * (1 - 0.25 * random.random())

    def _retry_delay(self, attempt: int, resp: _RawResponse) -> float:
        retry_after = _parse_retry_after(resp.headers.get("retry-after"))
        if retry_after is not None:
            return min(retry_after, MAX_RETRY_AFTER)
        return self._backoff(attempt)


def _should_retry(resp: _RawResponse, err: APIError) -> bool:
    """Never a 501 (``not_implemented``: the route is not served by this build, whatever it says);
    else the server's ``x-should-retry`` decides when present; else API.md §11's rule."""
    if resp.status == 501 or err.code == "not_implemented":
        return False
    hint = resp.headers.get("x-should-retry", "").strip().lower()
    if hint == "true":
        return True
    if hint == "false":
        return False
    if resp.status in (408, 429) or resp.status >= 500:
        return True
    return resp.status == 409 and err.code == "idempotency_in_progress"


def _make_error(resp: _RawResponse) -> APIError:
    text = resp.body.decode("utf-8", errors="replace")
    body: Any = text
    try:
        body = json.loads(text)
    except ValueError:
        pass
    fields: Dict[str, Any] = body if isinstance(body, dict) else {}
    message = fields.get("message") or text.strip() or f"HTTP {resp.status}"
    cls = error_class_for(resp.status)
    return cls(
        str(message),
        status=resp.status,
        code=fields.get("code"),
        param=fields.get("param"),
        request_id=fields.get("request_id") or resp.headers.get("x-request-id"),
        resource_id=fields.get("resource_id"),
        headers=resp.headers,
        body=body,
    )


def _decode(resp: _RawResponse) -> Any:
    ctype = resp.headers.get("content-type", "")
    text = resp.body.decode("utf-8")
    if "json" in ctype:
        return json.loads(text) if text else None
    return text


def _lower(items: Any) -> Dict[str, str]:
    out: Dict[str, str] = {}
    for k, v in items:
        k = k.lower()
        out[k] = f"{out[k]}, {v}" if k in out else v
    return out


def _encode_query(query: Optional[Mapping[str, Any]]) -> str:
    """The query string. A mapping value is sent as an OpenAPI ``deepObject``
    (``style: deepObject, explode: true``): ``{"metadata": {"k": "v"}}`` gives
    ``metadata[k]=v``, one pair per key, key and value percent-encoded."""
    if not query:
        return ""
    pairs: List[Tuple[str, str]] = []
    for k, v in query.items():
        if v is None or isinstance(v, NotGiven):
            continue
        if isinstance(v, Mapping):
            for key, value in v.items():
                if not isinstance(key, str):
                    raise TypeError(f"the keys of {k} are strings, not {type(key).__name__}")
                if value is None or not isinstance(value, (str, int, float)):
                    raise TypeError(f"{k}[{key}] takes a string, not {type(value).__name__}")
                pairs.append((f"{k}[{key}]", _scalar(value)))
            continue
        pairs.append((k, _scalar(v)))
    return urllib.parse.urlencode(pairs)


def _scalar(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def path_segment(value: str) -> str:
    """Quote an id for a URL path: nothing in it can reach another route."""
    if not isinstance(value, str) or not value:
        raise ValueError(f"an id must be a non-empty string, not {value!r}")
    return urllib.parse.quote(value, safe="")


def strip_not_given(**fields: Any) -> Dict[str, Any]:
    """A request body of the fields the caller gave (``None`` is sent as JSON null)."""
    return {k: v for k, v in fields.items() if v is not NOT_GIVEN}
