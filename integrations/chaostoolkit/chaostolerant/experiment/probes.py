"""Probes of stored Tolerant experiments: their status, their figures (per condition, each metric's mean with
its 95 % half-width, from ``GET /api/experiments/{id}/results``; one run's values, from
``GET /api/experiments/{id}/runs/{run}/figures``) and the ``[[validate]]`` gate's verdict
(``GET /api/experiments/{id}/validate``), so a steady-state hypothesis can say "checkout failure stays below
5 %" the way a release pipeline's ``tolerant validate`` does.

Metric keys are the report's: ``availability``, ``checkout_failure``, ``rejected``, ``breaker_opens``,
``p95_ok_ms[POST /cart/checkout]``, … (``metrics`` of the results lists them).
"""

from typing import Any, Dict, Optional

from chaoslib.exceptions import ActivityFailed
from chaoslib.types import Configuration, Secrets

from chaostolerant.client import TolerantClient

__all__ = [
    "condition_figure",
    "experiment_figures",
    "experiment_status",
    "gate_passed",
    "gate_verdict",
    "run_figures",
]


def experiment_status(
    experiment_id: int, configuration: Configuration = None, secrets: Secrets = None
) -> str:
    """Experiment ``experiment_id``'s status: ``pending``, ``scheduled``, ``running``, ``finished``,
    ``aborted``, ``interrupted``, ``failed`` or ``start_failed``."""
    client = TolerantClient(configuration, secrets)
    return str(client.get(f"/api/experiments/{int(experiment_id)}")["experiment"]["status"])


def experiment_figures(
    experiment_id: int, configuration: Configuration = None, secrets: Secrets = None
) -> Dict[str, Dict[str, Optional[Dict[str, Any]]]]:
    """Every condition's figures of experiment ``experiment_id``: ``{condition label: {metric key: {"mean",
    "half_width", "n"} or None}}``, e.g. ``figures["error 503 @ 100% / enforce"]["checkout_failure"]["mean"]``."""
    client = TolerantClient(configuration, secrets)
    results = client.get(f"/api/experiments/{int(experiment_id)}/results")
    metrics = results["metrics"]
    return {
        condition["label"]: dict(zip(metrics, condition["cells"]))
        for condition in results["conditions"]
    }


def condition_figure(
    experiment_id: int,
    metric: str,
    condition: Optional[str] = None,
    configuration: Configuration = None,
    secrets: Secrets = None,
) -> float:
    """The mean of ``metric`` in ``condition`` (a label such as ``error 503 @ 100% / enforce``; may be left out when
    the experiment has one condition) of experiment ``experiment_id``."""
    figures = experiment_figures(experiment_id, configuration, secrets)
    if condition is None:
        if len(figures) != 1:
            raise ActivityFailed(
                f"condition: experiment {experiment_id} has {len(figures)} conditions; name one of "
                + ", ".join(figures)
            )
        condition = next(iter(figures))
    if condition not in figures:
        raise ActivityFailed(
            f"condition: experiment {experiment_id} has no condition `{condition}` "
            f"(it has {', '.join(figures) or 'none'})"
        )
    cells = figures[condition]
    if metric not in cells:
        raise ActivityFailed(
            f"metric: experiment {experiment_id} has no metric `{metric}` (it has {', '.join(cells)})"
        )
    cell = cells[metric]
    if cell is None:
        raise ActivityFailed(f"metric: `{metric}` has no value in `{condition}`")
    return float(cell["mean"])


def run_figures(
    experiment_id: int,
    run_id: int,
    configuration: Configuration = None,
    secrets: Secrets = None,
) -> Dict[str, Any]:
    """The figures of one finished run of experiment ``experiment_id`` (its ids are the results' ``runs``):
    ``{"run_id", "condition", "round", "figures": {metric key: value}}``, e.g.
    ``figures["checkout_failure"]``."""
    client = TolerantClient(configuration, secrets)
    return dict(client.get(f"/api/experiments/{int(experiment_id)}/runs/{int(run_id)}/figures"))


def _latest_named(client: TolerantClient, name: str) -> int:
    """The id of the latest stored experiment called ``name`` (what ``tolerant validate SPEC`` judges)."""
    ids = [e["id"] for e in client.get("/api/experiments") if e["name"] == name]
    if not ids:
        raise ActivityFailed(f"name: no stored experiment is named `{name}`")
    return max(ids)


def gate_verdict(
    experiment_id: Optional[int] = None,
    name: Optional[str] = None,
    configuration: Configuration = None,
    secrets: Secrets = None,
) -> Dict[str, Any]:
    """The ``[[validate]]`` gate's verdict on experiment ``experiment_id`` (or on the latest one called
    ``name``): ``{"experiment_id", "passed", "results"}``, each result with its ``criterion``, ``outcome``
    (``pass``, ``fail``, ``unevaluable``) and ``explanation``. A spec without criteria is an activity
    failure."""
    if (experiment_id is None) == (name is None):
        raise ActivityFailed("experiment_id: give either experiment_id or name, not both or neither")
    client = TolerantClient(configuration, secrets)
    if experiment_id is None:
        experiment_id = _latest_named(client, str(name))
    return dict(client.get(f"/api/experiments/{int(experiment_id)}/validate"))


def gate_passed(
    experiment_id: Optional[int] = None,
    name: Optional[str] = None,
    configuration: Configuration = None,
    secrets: Secrets = None,
) -> bool:
    """Whether every ``[[validate]]`` criterion of experiment ``experiment_id`` (or of the latest one called
    ``name``) passed on its stored 95 % intervals: ``true`` is the tolerance of a release-gate hypothesis."""
    return bool(gate_verdict(experiment_id, name, configuration, secrets)["passed"])
