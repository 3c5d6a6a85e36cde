"""Tolerant experiments: run one inline or stored and wait for it, abort it when the Chaos Toolkit run is
interrupted or the wait runs out; read its figures and the ``[[validate]]`` gate's verdict."""

import json
import time

import pytest
from chaoslib.exceptions import ActivityFailed

import chaostolerant.experiment.actions as experiment_actions
from chaostolerant.experiment.actions import abort_experiment, run_experiment
from chaostolerant.experiment.probes import (
    condition_figure,
    experiment_figures,
    experiment_status,
    gate_passed,
    gate_verdict,
    run_figures,
)
from conftest import TOKEN, bearer, recording

SPEC = 'name = "recorded-gate"\nrounds = 2\n'
CONDITION = "error 503 @ 100% / enforce"


def test_an_inline_spec_is_stored_started_and_followed_until_it_finishes(dashboard, configuration, secrets):
    dashboard.replay(
        "experiment-created",
        "experiment-started",
        "experiment-running",
        "experiment-running",
        "experiment-finished",
    )
    summary = run_experiment(spec=SPEC, poll_interval=0.2, configuration=configuration, secrets=secrets)
    assert (summary["id"], summary["status"], summary["finished_runs"]) == (1, "finished", 2)
    assert dashboard.received[0].body.decode() == SPEC
    assert dashboard.requests() == [
        "POST /api/experiments",
        "POST /api/experiments/1/start",
        "GET /api/experiments/1",
        "GET /api/experiments/1",
        "GET /api/experiments/1",
    ]


def test_a_stored_experiment_already_running_is_a_conflict(dashboard, configuration, secrets):
    dashboard.replay("experiment-start-refused")
    with pytest.raises(ActivityFailed) as failure:
        run_experiment(experiment_id=1, configuration=configuration, secrets=secrets)
    assert "(409): experiment 1 is running; abort it or wait for it to finish" in str(failure.value)


def test_an_experiment_that_ends_otherwise_than_finished_is_a_failure_with_its_reason(
    dashboard, configuration, secrets
):
    dashboard.replay("experiment-started")
    # The finished recording, as an experiment stopped by its stop condition would read.
    stopped = recording("experiment-finished")
    stopped["body"]["experiment"].update(status="aborted", abort_reason="availability below 1 %")
    dashboard.answer(stopped["request"], 200, json.dumps(stopped["body"]).encode())
    with pytest.raises(ActivityFailed) as failure:
        run_experiment(experiment_id=1, configuration=configuration, secrets=secrets)
    assert str(failure.value) == "experiment 1 ended aborted: availability below 1 %"


def test_waiting_too_long_aborts_the_experiment(dashboard, configuration, secrets):
    dashboard.replay("experiment-started", "experiment-running", "experiment-running")
    dashboard.answer("POST /api/experiments/1/abort", 200, b'{"aborted": true, "id": 1}')
    with pytest.raises(ActivityFailed) as failure:
        run_experiment(
            experiment_id=1, timeout=0.3, poll_interval=0.2, configuration=configuration, secrets=secrets
        )
    assert "still pending after 0.3 s: aborted" in str(failure.value)
    assert dashboard.requests()[-1] == "POST /api/experiments/1/abort"


@pytest.mark.parametrize("abort_status", [200, 409])
def test_an_interrupted_wait_aborts_the_experiment_and_stays_interrupted(
    dashboard, configuration, secrets, monkeypatch, abort_status
):
    dashboard.replay("experiment-started", "experiment-running")
    dashboard.answer("POST /api/experiments/1/abort", abort_status, b'{"error": "already over"}')

    class InterruptedTime:
        """The actions' clock, interrupted (Ctrl-C) in its first pause."""

        monotonic = staticmethod(time.monotonic)

        @staticmethod
        def sleep(_seconds: float) -> None:
            """Raises what Ctrl-C raises."""
            raise KeyboardInterrupt

    monkeypatch.setattr(experiment_actions, "time", InterruptedTime)
    with pytest.raises(KeyboardInterrupt):
        run_experiment(experiment_id=1, configuration=configuration, secrets=secrets)
    assert dashboard.requests()[-1] == "POST /api/experiments/1/abort"


@pytest.mark.parametrize(
    "arguments, message",
    [
        ({}, "experiment_id: give either"),
        ({"experiment_id": 1, "spec": SPEC}, "experiment_id: give either"),
        ({"experiment_id": 1, "timeout": 0}, "timeout: 0"),
        ({"experiment_id": 1, "poll_interval": 0.01}, "poll_interval: 0.01"),
    ],
)
def test_run_arguments_are_checked_before_anything_is_sent(dashboard, configuration, secrets, arguments, message):
    with pytest.raises(ActivityFailed) as failure:
        run_experiment(configuration=configuration, secrets=secrets, **arguments)
    assert str(failure.value).startswith(message)
    assert dashboard.received == []


def test_abort_an_experiment(dashboard, configuration, secrets):
    dashboard.replay("experiment-aborted")
    assert abort_experiment(3, configuration=configuration, secrets=secrets) == {"aborted": True, "id": 3}
    assert dashboard.requests() == ["POST /api/experiments/3/abort"]
    assert bearer(dashboard.received[0]) == f"Bearer {TOKEN}"


def test_status_of_a_missing_experiment(dashboard, configuration):
    dashboard.replay("experiment-finished", "experiment-missing")
    assert experiment_status(1, configuration=configuration) == "finished"
    with pytest.raises(ActivityFailed) as failure:
        experiment_status(999, configuration=configuration)
    assert "(404): experiment 999 does not exist" in str(failure.value)


def test_figures_per_condition_and_one_figure(dashboard, configuration):
    dashboard.replay("results", "results", "results", "results")
    figures = experiment_figures(1, configuration=configuration)
    assert list(figures) == [CONDITION]
    assert figures[CONDITION]["checkout_failure"]["mean"] == 1.0
    assert figures[CONDITION]["checkout_failure"]["n"] == 2
    assert condition_figure(1, "checkout_failure", configuration=configuration) == 1.0
    with pytest.raises(ActivityFailed) as failure:
        condition_figure(1, "checkout_failure", "error 503 @ 50% / enforce", configuration=configuration)
    assert f"it has {CONDITION}" in str(failure.value)
    with pytest.raises(ActivityFailed) as failure:
        condition_figure(1, "happiness", configuration=configuration)
    assert str(failure.value).startswith("metric: experiment 1 has no metric `happiness`")


def test_one_runs_figures_and_a_run_that_is_not_there(dashboard, configuration):
    dashboard.replay("run-figures", "run-figures-missing")
    run = run_figures(1, 1, configuration=configuration)
    assert (run["run_id"], run["round"], run["condition"]) == (1, 1, CONDITION)
    assert run["figures"]["checkout_failure"] == 1.0
    assert 0.0 <= run["figures"]["availability"] <= 1.0
    with pytest.raises(ActivityFailed) as failure:
        run_figures(1, 999, configuration=configuration)
    assert "(404): run: experiment 1 has no finished run 999" in str(failure.value)


def test_the_gates_verdict_failed_and_passed(dashboard, configuration):
    dashboard.replay("gate", "gate-passed")
    verdict = gate_verdict(1, configuration=configuration)
    assert verdict["passed"] is False
    assert verdict["results"][0]["outcome"] == "fail"
    assert verdict["results"][0]["criterion"]["name"] == "checkout failure stays below 5 %"
    assert gate_passed(2, configuration=configuration) is True


def test_the_gate_of_the_latest_experiment_of_a_name(dashboard, configuration):
    dashboard.replay("experiments-two", "gate-passed")
    assert gate_passed(name="recorded-gate-healthy", configuration=configuration) is True
    assert dashboard.requests() == ["GET /api/experiments", "GET /api/experiments/2/validate"]


def test_a_spec_without_criteria_is_a_conflict_and_an_unknown_name_a_failure(dashboard, configuration):
    dashboard.replay("gate-without-criteria", "experiments-two")
    with pytest.raises(ActivityFailed) as failure:
        gate_passed(3, configuration=configuration)
    assert "(409): validate: the spec of experiment 3 has no [[validate]] criteria" in str(failure.value)
    with pytest.raises(ActivityFailed) as failure:
        gate_passed(name="never-run", configuration=configuration)
    assert str(failure.value) == "name: no stored experiment is named `never-run`"
