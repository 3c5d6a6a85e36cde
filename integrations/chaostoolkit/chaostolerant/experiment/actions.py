"""Run a Tolerant experiment from a Chaos Toolkit method: a stored one by id, or an inline TOML spec stored
first (``POST /api/experiments``), started (``POST /api/experiments/{id}/start``) and followed until it ends.

An interrupted Chaos Toolkit run (Ctrl-C, SIGTERM) aborts the Tolerant experiment it started before it stops,
so the controller's runner removes its fault.
"""

import logging
import time
from typing import Any, Dict, Optional

from chaoslib.exceptions import ActivityFailed
from chaoslib.types import Configuration, Secrets

from chaostolerant.client import TolerantClient
from chaostolerant.waiting import checked_wait

__all__ = ["abort_experiment", "run_experiment"]

logger = logging.getLogger("chaostoolkit")

#: Longest a run may be waited for, seconds (a day).
MAX_WAIT_S = 86_400.0
#: Shortest pause between two reads of the experiment's status, seconds.
MIN_POLL_S = 0.2
#: The statuses an experiment ends in.
TERMINAL = ("finished", "aborted", "interrupted", "failed", "start_failed")


def _summary(client: TolerantClient, experiment_id: int) -> Dict[str, Any]:
    """Experiment ``experiment_id`` as the dashboard lists it (status, runs planned and finished, …)."""
    return dict(client.get(f"/api/experiments/{int(experiment_id)}")["experiment"])


def abort_experiment(
    experiment_id: int, configuration: Configuration = None, secrets: Secrets = None
) -> Dict[str, Any]:
    """Abort Tolerant experiment ``experiment_id`` (its run in progress removes its fault first), or take
    it off the queue when it is only scheduled."""
    client = TolerantClient(configuration, secrets)
    return client.act("POST", f"/api/experiments/{int(experiment_id)}/abort")


def run_experiment(
    experiment_id: Optional[int] = None,
    spec: Optional[str] = None,
    timeout: float = 3600.0,
    poll_interval: float = 2.0,
    configuration: Configuration = None,
    secrets: Secrets = None,
) -> Dict[str, Any]:
    """Start Tolerant experiment ``experiment_id``, or store the TOML ``spec`` as a new one and start that,
    then wait until it ends, reading its status every ``poll_interval`` seconds. Returns the finished
    experiment (its ``id``, ``status``, ``finished_runs``, …); an experiment that ends otherwise (aborted,
    failed) or outlasts ``timeout`` seconds (it is aborted then) is an activity failure saying why."""
    if (experiment_id is None) == (spec is None):
        raise ActivityFailed("experiment_id: give either experiment_id or spec, not both or neither")
    timeout_s, poll_s = checked_wait(timeout, poll_interval, MAX_WAIT_S, MIN_POLL_S)
    client = TolerantClient(configuration, secrets)
    if experiment_id is None:
        experiment_id = int(client.act("POST", "/api/experiments", str(spec))["id"])
    experiment_id = int(experiment_id)
    client.act("POST", f"/api/experiments/{experiment_id}/start")
    deadline = time.monotonic() + timeout_s
    try:
        while True:
            summary = _summary(client, experiment_id)
            if summary["status"] in TERMINAL:
                break
            if time.monotonic() + poll_s > deadline:
                client.act("POST", f"/api/experiments/{experiment_id}/abort")
                raise ActivityFailed(
                    f"experiment {experiment_id} still {summary['status']} after {timeout_s:g} s: aborted"
                )
            time.sleep(poll_s)
    except ActivityFailed:
        raise
    except BaseException:
        # Interrupted (Ctrl-C, SIGTERM, an exit signal): the experiment stops with the Chaos Toolkit run; a
        # refused abort (it ended meanwhile) must not hide the interruption.
        try:
            client.act("POST", f"/api/experiments/{experiment_id}/abort")
        except ActivityFailed as error:
            logger.warning("aborting experiment %s: %s", experiment_id, error)
        raise
    if summary["status"] != "finished":
        reason = summary.get("abort_reason") or "no reason given"
        raise ActivityFailed(f"experiment {experiment_id} ended {summary['status']}: {reason}")
    return summary
