"""Actions on the game day's load (``PUT``/``DELETE /api/load``)."""

from typing import Any, Dict

from chaoslib.types import Configuration, Secrets

from chaostolerant.client import TolerantClient

__all__ = ["start_load", "stop_load"]


def start_load(
    users: int = 10,
    think_min_ms: int = 100,
    think_max_ms: int = 500,
    configuration: Configuration = None,
    secrets: Secrets = None,
) -> Dict[str, Any]:
    """Start (or replace) the game day's load: ``users`` virtual users (1–500) shopping on the Online
    Boutique mix, each thinking a uniform ``think_min_ms``–``think_max_ms`` (each at most 60,000) between
    tasks, until stopped (at most 2 h). Refused while a Tolerant experiment runs (it drives its own load)."""
    body = {"users": users, "think_min_ms": think_min_ms, "think_max_ms": think_max_ms}
    return TolerantClient(configuration, secrets).act("PUT", "/api/load", body)


def stop_load(configuration: Configuration = None, secrets: Secrets = None) -> Dict[str, Any]:
    """Stop the game day's load (nothing running is fine)."""
    return TolerantClient(configuration, secrets).act("DELETE", "/api/load")
