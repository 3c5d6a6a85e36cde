"""Actions on the breakers, through the dashboard (``POST /api/breakers``)."""

from typing import Any, Dict, Optional

from chaoslib.types import Configuration, Secrets

from chaostolerant.client import TolerantClient

__all__ = ["set_breaker_mode"]


def set_breaker_mode(
    mode: str,
    service: Optional[str] = None,
    configuration: Configuration = None,
    secrets: Secrets = None,
) -> Dict[str, Any]:
    """Switch every breaker of ``service`` (every replica of it; a replica's label like ``checkout#2`` that
    one only; every service when ``None``) to ``mode``: ``enforce``, ``shadow`` (decides but lets every call
    through), ``forced-open`` or ``disabled``. The rest of each breaker's config stays; a halt puts the
    startup config back."""
    body: Dict[str, Any] = {"mode": mode}
    if service:
        body["service"] = service
    return TolerantClient(configuration, secrets).act("POST", "/api/breakers", body)
