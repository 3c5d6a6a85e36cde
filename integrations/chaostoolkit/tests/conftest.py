"""A recorded dashboard for the unit tests: a loopback HTTP server that answers, in order, the exchanges
recorded from a real Tolerant by ``record.py`` (``recorded/*.json``), and keeps every request it received.

A test queues the recordings it expects (``dashboard.replay("fault-put")``); a request that is not the next
recorded one is answered 599 with what was expected, so the activity fails and the test says why.
"""

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional

import pytest

RECORDED = Path(__file__).parent / "recorded"
#: The token the tests' secrets carry (the recorded server does not check it; the tests do).
TOKEN = "recorded-token"


def recording(name: str) -> Dict[str, Any]:
    """Recorded exchange ``name``: ``{"request": "METHOD PATH", "status": …, "body": …}``."""
    return dict(json.loads((RECORDED / f"{name}.json").read_text()))


@dataclass
class Received:
    """One request the recorded dashboard received."""

    method: str
    path: str
    headers: Dict[str, str]
    body: bytes

    def json(self) -> Any:
        """The request's body as JSON."""
        return json.loads(self.body)


@dataclass
class Answer:
    """What the server answers to the next request: a recording, possibly after a stall."""

    request: str
    status: int
    body: bytes
    stall_s: float = 0.0
    #: Whether the answer says its length (else the body ends with the connection).
    declare_length: bool = True


@dataclass
class RecordedDashboard:
    """The server's queue of answers and what it received."""

    url: str = ""
    answers: List[Answer] = field(default_factory=list)
    received: List[Received] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def replay(self, *names: str) -> None:
        """Queue recordings ``names``, answered in this order."""
        for name in names:
            recorded = recording(name)
            body = b"" if recorded["body"] is None else json.dumps(recorded["body"]).encode()
            self.answer(recorded["request"], recorded["status"], body)

    def answer(
        self,
        request: str,
        status: int,
        body: bytes,
        stall_s: float = 0.0,
        declare_length: bool = True,
    ) -> None:
        """Queue one answer to ``request`` ("METHOD PATH"), sent after ``stall_s`` seconds, its length
        declared unless ``declare_length`` is false."""
        with self.lock:
            self.answers.append(Answer(request, status, body, stall_s, declare_length))

    def next_answer(self, request: str) -> Answer:
        """The answer to ``request``: the next queued one if it is for this request, else a 599."""
        with self.lock:
            if self.answers and self.answers[0].request == request:
                return self.answers.pop(0)
            expected = self.answers[0].request if self.answers else "nothing"
        message = json.dumps({"error": f"recorded dashboard: expected {expected}, got {request}"})
        return Answer(request, 599, message.encode())

    def requests(self) -> List[str]:
        """Every request received, as "METHOD PATH"."""
        return [f"{r.method} {r.path}" for r in self.received]


def _handler(dashboard: RecordedDashboard) -> type:
    """A request handler class answering from ``dashboard``."""

    class Handler(BaseHTTPRequestHandler):
        """Answers every method from the recorded queue."""

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: the tests read ``dashboard.received``."""

        def _serve(self) -> None:
            """Records the request, then sends its queued answer."""
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            dashboard.received.append(
                Received(self.command, self.path, dict(self.headers.items()), body)
            )
            answer = dashboard.next_answer(f"{self.command} {self.path}")
            time.sleep(answer.stall_s)
            self.send_response(answer.status)
            self.send_header("Content-Type", "application/json")
            if answer.declare_length:
                self.send_header("Content-Length", str(len(answer.body)))
            self.end_headers()
            self.wfile.write(answer.body)

        do_GET = do_PUT = do_POST = do_DELETE = _serve

    return Handler


@pytest.fixture
def dashboard() -> Iterator[RecordedDashboard]:
    """A recorded dashboard on a loopback port of its own, stopped after the test."""
    state = RecordedDashboard()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    server.daemon_threads = True
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield state
    server.shutdown()
    server.server_close()


@pytest.fixture
def configuration(dashboard: RecordedDashboard) -> Dict[str, Any]:
    """An experiment's configuration pointing at the recorded dashboard."""
    return {"tolerant_url": dashboard.url}


@pytest.fixture
def secrets() -> Dict[str, Any]:
    """The secrets an activity declaring ``"secrets": ["tolerant"]`` receives (the scope, flattened)."""
    return {"tolerant_token": TOKEN}


def bearer(received: Received) -> Optional[str]:
    """The request's Authorization header."""
    return received.headers.get("Authorization")
