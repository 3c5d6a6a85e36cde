"""Records the dashboard answers the unit tests replay (``tests/recorded/*.json``) from a real Tolerant.

Start a fresh stack (``TOLERANT_TOKEN=… cargo run --release``, nothing else running on it), then::

    TOLERANT_URL=http://127.0.0.1:8080 TOLERANT_TOKEN=… python tests/record.py

It puts and removes a fault under load, switches a mode, provokes each kind of refusal (400 naming a field,
401, 409) and runs a two-round Tolerant experiment of a few seconds with a ``[[validate]]`` criterion. Each
answer is written as ``{"request": "METHOD PATH", "status": …, "body": …}``. Run by hand, not by the tests.
"""

import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Callable, Optional

import requests

RECORDED = Path(__file__).parent / "recorded"

GATED_SPEC = """name = "recorded-gate"
rounds = 2
duration = "3s"
warmup = "1s"
order = "fixed"
seed = 7

[load]
users = 6
think_time = ["50ms", "150ms"]

[fault]
target = "payment"
kind = "error"
status = 503
rates = [1.0]

[breaker]
modes = ["enforce"]

[breaker.open]
base = "5s"

[[validate]]
name = "checkout failure stays below 5 %"
metric = "checkout_failure"
fault_rate = 1.0
breaker = "enforce"
comparison = "<"
threshold = 0.05
"""

#: The same experiment without the outage: checkout failure stays at 0, the criterion passes.
HEALTHY_SPEC = GATED_SPEC.replace('"recorded-gate"', '"recorded-gate-healthy"').replace(
    "rates = [1.0]", "rates = [0.0]"
).replace("fault_rate = 1.0", "fault_rate = 0.0")

UNGATED_SPEC = 'name = "recorded-ungated"\nrounds = 1\nduration = "2s"\n\n[load]\nusers = 1\n'


def exchange(name: str, method: str, path: str, body: Any = None, token: Optional[str] = None) -> Any:
    """Sends one request, writes its answer as ``recorded/<name>.json`` and returns the decoded body."""
    headers = {}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    data = None
    if isinstance(body, str):
        data = body.encode()
    elif body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    response = requests.request(method, URL + path, data=data, headers=headers, timeout=30)
    answer = response.json() if response.content else None
    (RECORDED / f"{name}.json").write_text(
        json.dumps(
            {"request": f"{method} {path}", "status": response.status_code, "body": answer},
            indent=2,
        )
        + "\n"
    )
    print(f"{name}: {response.status_code}")
    return answer


def until(what: str, check: Callable[[], bool], timeout: float = 60.0) -> None:
    """Waits until ``check()`` is true, at most ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            sys.exit(f"gave up waiting for {what}")
        time.sleep(0.5)


def until_finished(experiment: int) -> None:
    """Waits until Tolerant experiment ``experiment`` has finished, at most two minutes."""

    def finished() -> bool:
        answer = requests.get(f"{URL}/api/experiments/{experiment}", timeout=10).json()
        return bool(answer["experiment"]["status"] == "finished")

    until(f"experiment {experiment} to finish", finished, timeout=120)


def breaker_state(name: str) -> Optional[str]:
    """The state of breaker ``name`` on the board now."""
    for tile in requests.get(URL + "/api/breakers", timeout=10).json()["breakers"]:
        if tile["name"] == name:
            return tile["state"]
    return None


def main() -> None:
    """The recorded sequence."""
    RECORDED.mkdir(exist_ok=True)
    until("the first breaker board", lambda: breaker_state("checkout->payment") is not None)
    exchange("breakers-closed", "GET", "/api/breakers")
    exchange("faults-none", "GET", "/api/faults")
    load = {"users": 8, "think_min_ms": 50, "think_max_ms": 200}
    exchange("load-started", "PUT", "/api/load", load, TOKEN)
    exchange(
        "load-refused-users",
        "PUT",
        "/api/load",
        {"users": 0, "think_min_ms": 50, "think_max_ms": 200},
        TOKEN,
    )
    fault = {"kind": "error", "status": 503, "rate": 1.0, "lease": "120s"}
    path = "/api/faults/payment-outage?target=payment"
    exchange("fault-unauthorized", "PUT", path, fault, "not-the-token")
    exchange(
        "fault-refused-status",
        "PUT",
        path,
        {"kind": "error", "status": 200, "rate": 1.0},
        TOKEN,
    )
    exchange("fault-put", "PUT", path, fault, TOKEN)
    exchange("faults-one", "GET", "/api/faults")
    until("checkout->payment open", lambda: breaker_state("checkout->payment") == "open")
    exchange("breakers-open", "GET", "/api/breakers")
    exchange("fault-removed", "DELETE", path, None, TOKEN)
    exchange("fault-remove-missing", "DELETE", path, None, TOKEN)
    exchange("mode-set", "POST", "/api/breakers", {"service": "checkout", "mode": "shadow"}, TOKEN)
    exchange("mode-refused", "POST", "/api/breakers", {"mode": "sideways"}, TOKEN)
    exchange("halted", "POST", "/api/halt", None, TOKEN)
    exchange("load-stopped", "DELETE", "/api/load", None, TOKEN)

    created = exchange("experiment-created", "POST", "/api/experiments", GATED_SPEC, TOKEN)
    experiment = created["id"]
    exchange("experiment-started", "POST", f"/api/experiments/{experiment}/start", None, TOKEN)
    exchange("experiment-running", "GET", f"/api/experiments/{experiment}")
    exchange("load-refused-running", "PUT", "/api/load", load, TOKEN)
    exchange(
        "experiment-start-refused", "POST", f"/api/experiments/{experiment}/start", None, TOKEN
    )
    until_finished(experiment)
    exchange("experiment-finished", "GET", f"/api/experiments/{experiment}")
    exchange("experiments", "GET", "/api/experiments")
    results = exchange("results", "GET", f"/api/experiments/{experiment}/results")
    run = results["runs"][0]["id"]
    exchange("run-figures", "GET", f"/api/experiments/{experiment}/runs/{run}/figures")
    exchange("run-figures-missing", "GET", f"/api/experiments/{experiment}/runs/999/figures")
    exchange("gate", "GET", f"/api/experiments/{experiment}/validate")
    healthy = exchange("healthy-created", "POST", "/api/experiments", HEALTHY_SPEC, TOKEN)["id"]
    exchange("healthy-started", "POST", f"/api/experiments/{healthy}/start", None, TOKEN)
    until_finished(healthy)
    exchange("gate-passed", "GET", f"/api/experiments/{healthy}/validate")
    exchange("experiments-two", "GET", "/api/experiments")
    ungated = exchange("ungated-created", "POST", "/api/experiments", UNGATED_SPEC, TOKEN)["id"]
    exchange("gate-without-criteria", "GET", f"/api/experiments/{ungated}/validate")
    exchange("ungated-started", "POST", f"/api/experiments/{ungated}/start", None, TOKEN)
    exchange("experiment-aborted", "POST", f"/api/experiments/{ungated}/abort", None, TOKEN)
    exchange("experiment-missing", "GET", "/api/experiments/999")


if __name__ == "__main__":
    URL = os.environ["TOLERANT_URL"].rstrip("/")
    TOKEN = os.environ["TOLERANT_TOKEN"]
    main()
