"""Probes of the faults the agent holds now (``GET /api/faults``, asked of the agent itself)."""

from typing import Any, Dict, List, Optional

from chaoslib.types import Configuration, Secrets

from chaostolerant.client import TolerantClient

__all__ = ["active_faults", "fault_count"]


def active_faults(
    configuration: Configuration = None, secrets: Secrets = None
) -> List[Dict[str, Any]]:
    """The faults the agent holds now, as it lists them: each with its ``id``, the ``fault`` (kind, rate,
    match, lease), ``lease_ms``, ``expires_in_ms`` and ``injected`` (requests it fired on so far)."""
    answer = TolerantClient(configuration, secrets).get("/api/faults")
    return list(answer["faults"])


def fault_count(
    fault_id: Optional[str] = None,
    configuration: Configuration = None,
    secrets: Secrets = None,
) -> int:
    """How many faults the agent holds now (only those with id ``fault_id`` when given): ``0`` is the
    tolerance of a hypothesis that nothing is being injected."""
    faults = active_faults(configuration, secrets)
    return sum(1 for fault in faults if fault_id is None or fault["id"] == fault_id)
