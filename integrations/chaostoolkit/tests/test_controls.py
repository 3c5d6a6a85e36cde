"""The control halts Tolerant after every experiment, whatever its status, and never raises."""

import logging

from chaostolerant.controls import after_experiment_control
from conftest import TOKEN, bearer


def test_the_end_of_an_experiment_halts_and_stops_the_load(dashboard, configuration):
    dashboard.replay("halted", "load-stopped")
    # Controls receive every scope of the experiment's secrets, not one flattened.
    secrets = {"tolerant": {"tolerant_token": TOKEN}}
    after_experiment_control(
        context={}, state={"status": "interrupted"}, configuration=configuration, secrets=secrets,
        stop_load=True,
    )
    assert dashboard.requests() == ["POST /api/halt", "DELETE /api/load"]
    assert [bearer(r) for r in dashboard.received] == [f"Bearer {TOKEN}"] * 2


def test_without_stop_load_only_the_faults_are_halted(dashboard, configuration, secrets):
    dashboard.replay("halted")
    after_experiment_control(context={}, state={"status": "completed"}, configuration=configuration, secrets=secrets)
    assert dashboard.requests() == ["POST /api/halt"]


def test_a_refused_halt_is_logged_not_raised(dashboard, configuration, caplog):
    dashboard.replay("fault-unauthorized")
    # The recorded 401 was for a fault; the halt is answered the same way by a dashboard with another token.
    dashboard.answers[0].request = "POST /api/halt"
    with caplog.at_level(logging.ERROR, logger="chaostoolkit"):
        after_experiment_control(
            context={}, state={"status": "failed"}, configuration=configuration,
            secrets={"tolerant_token": "not-the-token"},
        )
    assert "could not be halted" in caplog.text and "the token is wrong" in caplog.text
