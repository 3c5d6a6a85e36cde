"""A service Tolerant did not write: an HTTP shop whose calls to its upstream go through a pybreaker breaker.

`python pybreaker_shop.py upstream` serves a plain upstream (200 "stock: 7" to every GET).
`python pybreaker_shop.py shop` serves `GET /` (calls UPSTREAM through the breaker: 200, 502 when the call fails,
503 when the breaker rejects) and `GET /metrics` (prometheus-client: `pybreaker_state{breaker}` 0 closed, 1 open,
2 half-open). With PUSH_URL set, a pybreaker listener also posts every state change to Tolerant's
`POST /api/breaker-events` with the bearer token in TOLERANT_TOKEN.

Both print `listening <port>` once they accept connections (port 0: the system picks one).
"""

import http.server
import json
import os
import sys
import urllib.request

MODE = sys.argv[1]


class Upstream(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"stock: 7"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def serve(handler):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    print(f"listening {server.server_address[1]}", flush=True)
    server.serve_forever()


if MODE == "upstream":
    serve(Upstream)
    sys.exit(0)

import pybreaker  # noqa: E402
from prometheus_client import CONTENT_TYPE_LATEST, Gauge, generate_latest  # noqa: E402

UPSTREAM = os.environ["UPSTREAM"]
PUSH_URL = os.environ.get("PUSH_URL")
TOKEN = os.environ.get("TOLERANT_TOKEN", "")
STATE = Gauge("pybreaker_state", "State of each pybreaker breaker: 0 closed, 1 open, 2 half-open", ["breaker"])
CODES = {"closed": 0, "open": 1, "half-open": 2}


class Observe(pybreaker.CircuitBreakerListener):
    def state_change(self, cb, old_state, new_state):
        STATE.labels(breaker=cb.name).set(CODES[new_state.name])
        if PUSH_URL:
            event = {"service": "shop", "breaker": cb.name, "to": new_state.name, "source": "pybreaker"}
            if old_state is not None:
                event["from"] = old_state.name
            request = urllib.request.Request(
                PUSH_URL,
                data=json.dumps(event).encode(),
                method="POST",
                headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"},
            )
            try:
                urllib.request.urlopen(request, timeout=2).read()
            except Exception as error:  # the shop keeps serving when Tolerant is away
                print(f"push failed: {error}", file=sys.stderr, flush=True)


BREAKER = pybreaker.CircuitBreaker(fail_max=3, reset_timeout=1, name="upstream", listeners=[Observe()])
STATE.labels(breaker="upstream").set(0)


def fetch():
    with urllib.request.urlopen(UPSTREAM + "/stock", timeout=2) as answer:
        return answer.read()


class Shop(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def answer(self, status, body, content_type="text/plain"):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path == "/metrics":
            self.answer(200, generate_latest(), CONTENT_TYPE_LATEST)
            return
        try:
            self.answer(200, b"shop: " + BREAKER.call(fetch))
        except pybreaker.CircuitBreakerError:
            self.answer(503, b"breaker open")
        except Exception:
            self.answer(502, b"upstream failed")

    def log_message(self, *args):
        pass


serve(Shop)
