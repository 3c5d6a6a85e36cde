"""A control that halts Tolerant at the end of every experiment, however it ends: completed, deviated,
failed, or interrupted (Ctrl-C, SIGTERM, an exit signal). Chaos Toolkit plays rollbacks only when a run was
not interrupted; its controls' ``after_experiment_control`` runs in every case, so a Chaos Toolkit run never
leaves a Tolerant fault behind (and, with ``stop_load``, no game-day load either).

Declared in an experiment (or in the settings, for every experiment)::

    "controls": [{
        "name": "tolerant-halt",
        "provider": {"type": "python", "module": "chaostolerant.controls",
                     "arguments": {"stop_load": true}}
    }]

It reads the dashboard's URL from the experiment's ``configuration`` (``tolerant_url``) and the token from its
``secrets`` (``tolerant_token``, flat or in the ``tolerant`` scope).
"""

import logging
from typing import Any, Optional

from chaoslib.exceptions import ActivityFailed
from chaoslib.types import Configuration, Experiment, Journal, Secrets

from chaostolerant.client import TolerantClient

__all__ = ["after_experiment_control", "halt_tolerant"]

logger = logging.getLogger("chaostoolkit")


def halt_tolerant(
    configuration: Optional[Configuration],
    secrets: Optional[Secrets],
    stop_load: bool = False,
) -> bool:
    """Halt every fault (and stop the game day's load when ``stop_load``); ``True`` when Tolerant
    confirmed it. A failure is logged, never raised: a control must not hide how the run ended."""
    try:
        client = TolerantClient(configuration, secrets)
        client.act("POST", "/api/halt")
        logger.info("Tolerant halted: no fault left on its agents")
        if stop_load:
            client.act("DELETE", "/api/load")
            logger.info("Tolerant's game-day load stopped")
        return True
    except ActivityFailed as error:
        logger.error("Tolerant could not be halted at the end of the experiment: %s", error)
        return False


def after_experiment_control(
    context: Experiment,
    state: Journal,
    configuration: Configuration = None,
    secrets: Secrets = None,
    stop_load: bool = False,
    **kwargs: Any,
) -> None:
    """After the experiment (its journal in ``state``), whatever its status: halt Tolerant, and stop the
    game day's load when ``stop_load`` is true."""
    status = (state or {}).get("status", "unknown")
    logger.info("Experiment ended %s: halting Tolerant", status)
    halt_tolerant(configuration, secrets, stop_load=stop_load)
