"""The one way this extension talks to Tolerant's dashboard API.

The dashboard's URL comes from the experiment's ``configuration`` (``tolerant_url``) and its token from the
experiment's ``secrets`` (``tolerant_token``), never from globals or the process environment: an experiment
says where they come from, e.g. ``{"type": "env", "key": "TOLERANT_TOKEN"}``. Reads need no token; every
action does.

Every request has a time cap (``tolerant_timeout`` seconds in the configuration, 10 unless given) on the whole
exchange and a size cap on the answer, checked while reading. Every refusal of Tolerant (400 naming a field,
401, 404, 409, 429, 5xx) is raised as :class:`chaoslib.exceptions.ActivityFailed` carrying Tolerant's own
message, so a Chaos Toolkit run shows why in its journal.
"""

import json
import time
from typing import Any, Dict, Optional
from urllib.parse import quote, urlsplit

import requests
from chaoslib.exceptions import ActivityFailed
from chaoslib.types import Configuration, Secrets

__all__ = [
    "DEFAULT_TIMEOUT_S",
    "MAX_ANSWER_BYTES",
    "MAX_TIMEOUT_S",
    "SECRETS_SCOPE",
    "TolerantClient",
    "path_segment",
]

#: Seconds one request may take, connection to last byte, unless ``tolerant_timeout`` says otherwise.
DEFAULT_TIMEOUT_S = 10.0
#: Most ``tolerant_timeout`` may be.
MAX_TIMEOUT_S = 300.0
#: Largest answer read from the dashboard (a results document of a big experiment fits many times over).
MAX_ANSWER_BYTES = 16 * 1024 * 1024
#: The secrets scope the experiment's token is looked up in when it is not given flat (controls receive
#: every scope of the experiment's ``secrets``, activities only those they name).
SECRETS_SCOPE = "tolerant"

_CHUNK_BYTES = 64 * 1024


def path_segment(value: str) -> str:
    """Quote ``value`` as one URL path segment (nothing in it may start another segment or a query)."""
    return quote(value, safe="")


def _dashboard_url(configuration: Optional[Configuration]) -> str:
    """The dashboard's base URL from ``configuration["tolerant_url"]``, checked, without a trailing slash."""
    url = (configuration or {}).get("tolerant_url")
    if not url or not isinstance(url, str):
        raise ActivityFailed(
            "configuration: tolerant_url is missing; set it in the experiment's configuration, e.g. "
            '{"tolerant_url": {"type": "env", "key": "TOLERANT_URL"}}'
        )
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ActivityFailed(
            f"configuration: tolerant_url `{url}` is not an http:// or https:// URL"
        )
    if parts.query or parts.fragment:
        raise ActivityFailed(
            f"configuration: tolerant_url `{url}` must be the dashboard's base URL, without a query"
        )
    return url.strip().rstrip("/")


def _timeout(configuration: Optional[Configuration]) -> float:
    """``configuration["tolerant_timeout"]`` in seconds, bounded; the default when absent."""
    value = (configuration or {}).get("tolerant_timeout", DEFAULT_TIMEOUT_S)
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        raise ActivityFailed(
            f"configuration: tolerant_timeout `{value}` is not a number of seconds"
        ) from None
    if not 0 < seconds <= MAX_TIMEOUT_S:
        raise ActivityFailed(
            f"configuration: tolerant_timeout {seconds} is not in (0, {MAX_TIMEOUT_S:g}] seconds"
        )
    return seconds


def _token(secrets: Optional[Secrets]) -> Optional[str]:
    """The dashboard token: ``secrets["tolerant_token"]``, else ``secrets["tolerant"]["tolerant_token"]``."""
    secrets = secrets or {}
    token = secrets.get("tolerant_token")
    if token is None and isinstance(secrets.get(SECRETS_SCOPE), dict):
        token = secrets[SECRETS_SCOPE].get("tolerant_token")
    if token is not None and not isinstance(token, str):
        raise ActivityFailed("secrets: tolerant_token must be a string")
    return token or None


class TolerantClient:
    """Requests to one dashboard, with the experiment's URL, token and time cap."""

    def __init__(
        self,
        configuration: Optional[Configuration] = None,
        secrets: Optional[Secrets] = None,
    ) -> None:
        """Reads and checks the URL, timeout and token the experiment gives."""
        self.base_url = _dashboard_url(configuration)
        self.timeout_s = _timeout(configuration)
        self._token = _token(secrets)

    def get(self, path: str) -> Any:
        """``GET path`` (open to read, no token sent); the decoded JSON answer."""
        return self._request("GET", path, body=None, acting=False)

    def act(self, method: str, path: str, body: Any = None) -> Any:
        """A mutation with the bearer token: ``body`` is sent as JSON (a ``str`` as it is); the JSON answer."""
        if self._token is None:
            raise ActivityFailed(
                "secrets: tolerant_token is missing; an action needs the dashboard's token, e.g. "
                '"secrets": {"tolerant": {"tolerant_token": {"type": "env", "key": "TOLERANT_TOKEN"}}} '
                'and "secrets": ["tolerant"] in the activity\'s provider'
            )
        return self._request(method, path, body=body, acting=True)

    def _request(self, method: str, path: str, body: Any, acting: bool) -> Any:
        """Sends one request and reads its answer within the time and size caps."""
        url = f"{self.base_url}{path}"
        headers: Dict[str, str] = {"Accept": "application/json"}
        data: Optional[bytes] = None
        if acting:
            headers["Authorization"] = f"Bearer {self._token}"
        if isinstance(body, str):
            data = body.encode("utf-8")
            headers["Content-Type"] = "text/plain; charset=utf-8"
        elif body is not None:
            data = json.dumps(body).encode("utf-8")
            headers["Content-Type"] = "application/json"
        deadline = time.monotonic() + self.timeout_s
        try:
            with requests.request(
                method,
                url,
                data=data,
                headers=headers,
                timeout=self.timeout_s,
                stream=True,
                allow_redirects=False,
            ) as response:
                raw = self._read_capped(response, deadline, f"{method} {path}")
                status = response.status_code
        except requests.RequestException as error:
            raise ActivityFailed(
                f"Tolerant at {self.base_url} did not answer {method} {path}: {error}"
            ) from None
        answer = _decode(raw)
        if not 200 <= status < 300:
            message = answer.get("error") if isinstance(answer, dict) else None
            if not message:
                message = raw[:500].decode("utf-8", "replace") or "no message"
            raise ActivityFailed(f"Tolerant refused {method} {path} ({status}): {message}")
        return answer

    def _read_capped(self, response: requests.Response, deadline: float, what: str) -> bytes:
        """The answer's bytes, refused once larger than :data:`MAX_ANSWER_BYTES` or later than ``deadline``."""
        declared = response.headers.get("Content-Length")
        if declared is not None and declared.isdigit() and int(declared) > MAX_ANSWER_BYTES:
            raise ActivityFailed(
                f"Tolerant's answer to {what} is {declared} bytes, above {MAX_ANSWER_BYTES}"
            )
        chunks = []
        size = 0
        for chunk in response.iter_content(_CHUNK_BYTES):
            size += len(chunk)
            if size > MAX_ANSWER_BYTES:
                raise ActivityFailed(
                    f"Tolerant's answer to {what} is larger than {MAX_ANSWER_BYTES} bytes"
                )
            if time.monotonic() > deadline:
                raise ActivityFailed(
                    f"Tolerant's answer to {what} took longer than {self.timeout_s:g} s"
                )
            chunks.append(chunk)
        return b"".join(chunks)


def _decode(raw: bytes) -> Any:
    """The JSON in ``raw``; ``None`` for an empty or non-JSON body."""
    if not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return None
