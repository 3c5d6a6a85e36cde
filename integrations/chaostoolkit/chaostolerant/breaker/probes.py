"""Probes of the breakers as the dashboard's sampler reads them once a second (``GET /api/breakers``).

A breaker is named ``caller->dependency`` (``checkout->payment``: Checkout's breaker around its calls to
Payment; a scaled caller's replicas as ``checkout#2->payment``). Its state is ``closed``, ``open`` or
``half_open``; its counters are cumulative (``calls``, ``failures``, ``rejected``, ``opens``) and over the
last ten seconds (``window``).
"""

import time
from typing import Any, Dict, List

from chaoslib.exceptions import ActivityFailed
from chaoslib.types import Configuration, Secrets

from chaostolerant.client import TolerantClient
from chaostolerant.waiting import checked_wait

__all__ = ["breaker", "breaker_state", "breakers", "wait_for_breaker_state"]

#: Longest ``wait_for_breaker_state`` may be asked to wait, seconds.
MAX_WAIT_S = 3600.0
#: Shortest pause between two reads while waiting, seconds (the board is read once a second).
MIN_POLL_S = 0.1

_STATES = ("closed", "open", "half_open")


def breakers(
    configuration: Configuration = None, secrets: Secrets = None
) -> List[Dict[str, Any]]:
    """Every breaker of the testbed with its state, mode, counters and config, as the dashboard's board
    shows them (empty until the dashboard's first read, a second after it starts)."""
    return list(TolerantClient(configuration, secrets).get("/api/breakers")["breakers"])


def _find(tiles: List[Dict[str, Any]], name: str) -> Dict[str, Any]:
    """The tile of breaker ``name``; an activity failure listing the known names otherwise."""
    for tile in tiles:
        if tile["name"] == name:
            return tile
    known = ", ".join(tile["name"] for tile in tiles) or "none yet"
    raise ActivityFailed(f"name: no breaker `{name}` on the board (known: {known})")


def breaker(
    name: str, configuration: Configuration = None, secrets: Secrets = None
) -> Dict[str, Any]:
    """Breaker ``name`` now: ``state``, ``mode``, ``calls``, ``failures``, ``rejected``, ``opens``, the
    last ten seconds' ``window`` (with its ``failure_rate``), ``open_until_ms`` and its ``config``."""
    return _find(breakers(configuration, secrets), name)


def breaker_state(
    name: str, configuration: Configuration = None, secrets: Secrets = None
) -> str:
    """Breaker ``name``'s state now: ``closed``, ``open`` or ``half_open`` (the tolerance of a hypothesis
    such as "checkout->payment is closed")."""
    return str(breaker(name, configuration, secrets)["state"])


def wait_for_breaker_state(
    name: str,
    state: str,
    timeout: float = 60.0,
    poll_interval: float = 0.5,
    configuration: Configuration = None,
    secrets: Secrets = None,
) -> Dict[str, Any]:
    """Read breaker ``name`` every ``poll_interval`` seconds until it is in ``state`` (``closed``, ``open``
    or ``half_open``) and return it then; an activity failure with the last state seen when ``timeout``
    seconds pass first."""
    if state not in _STATES:
        raise ActivityFailed(f"state: `{state}` is not one of {', '.join(_STATES)}")
    timeout_s, poll_s = checked_wait(timeout, poll_interval, MAX_WAIT_S, MIN_POLL_S)
    client = TolerantClient(configuration, secrets)
    deadline = time.monotonic() + timeout_s
    while True:
        tile = _find(client.get("/api/breakers")["breakers"], name)
        if tile["state"] == state:
            return tile
        if time.monotonic() + poll_s > deadline:
            raise ActivityFailed(
                f"breaker `{name}` is still {tile['state']} after {timeout_s:g} s, not {state}"
            )
        time.sleep(poll_s)
