"""Actions on the agent's faults, through the dashboard (``PUT``/``DELETE /api/faults/{id}``, ``POST /api/halt``).

The agent checks every field (kind, rate in [0, 1], status 400–599, durations, the lease against its cap) and
the dashboard answers a refusal with a 400 naming the field; it surfaces here as ``ActivityFailed``.
"""

from typing import Any, Dict, Optional

from chaoslib.types import Configuration, Secrets

from chaostolerant.client import TolerantClient, path_segment

__all__ = ["halt", "put_fault", "remove_fault"]


def put_fault(
    kind: str = "error",
    rate: float = 1.0,
    status: Optional[int] = None,
    delay: Optional[str] = None,
    jitter: Optional[str] = None,
    match: Optional[Dict[str, str]] = None,
    lease: Optional[str] = "60s",
    fault_id: str = "chaostoolkit",
    target: str = "payment",
    configuration: Configuration = None,
    secrets: Secrets = None,
) -> Dict[str, Any]:
    """Put a fault on the agent of service ``target`` (Payment's in the embedded stack), replacing one with
    the same ``fault_id``.

    ``kind`` is ``error`` (answer ``status`` at once, 500 unless given), ``hang``, ``delay`` (wait ``delay``
    plus up to ``jitter``, durations like ``"250ms"``) or ``reset``; ``rate`` is the fraction of matching
    requests it fires on. ``match`` narrows it, e.g. ``{"method": "POST", "path_prefix": "/charge"}``.
    ``lease`` is how long the agent keeps the fault without a renewal (``None``: the agent's default), so a
    fault outlives no crashed experiment by more than its lease. Returns the dashboard's answer
    (``{"id": fault_id}``)."""
    fault: Dict[str, Any] = {"kind": kind, "rate": rate}
    if kind == "error":
        fault["status"] = 500 if status is None else status
    elif status is not None:
        fault["status"] = status
    if delay is not None:
        fault["delay"] = delay
    if jitter is not None:
        fault["jitter"] = jitter
    if match:
        fault["match"] = match
    if lease is not None:
        fault["lease"] = lease
    client = TolerantClient(configuration, secrets)
    return client.act(
        "PUT",
        f"/api/faults/{path_segment(fault_id)}?target={path_segment(target)}",
        fault,
    )


def remove_fault(
    fault_id: str = "chaostoolkit",
    target: str = "payment",
    configuration: Configuration = None,
    secrets: Secrets = None,
) -> Dict[str, Any]:
    """Remove fault ``fault_id`` from the agent of service ``target`` now; a fault the agent does not hold
    (already removed, its lease ended) is an activity failure naming it."""
    client = TolerantClient(configuration, secrets)
    return client.act(
        "DELETE",
        f"/api/faults/{path_segment(fault_id)}?target={path_segment(target)}",
    )


def halt(configuration: Configuration = None, secrets: Secrets = None) -> Dict[str, Any]:
    """Halt everything: every fault on every agent (and every container fault) removed, every service's
    breakers back to their startup config. The documented rollback of any experiment that puts faults."""
    client = TolerantClient(configuration, secrets)
    return client.act("POST", "/api/halt")
