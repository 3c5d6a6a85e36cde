"""The client's caps: an answer too large or too slow is an activity failure, and an unreachable dashboard
says where it was looked for."""

import socket

import pytest
from chaoslib.exceptions import ActivityFailed

import chaostolerant.client as client
from chaostolerant.breaker.probes import breakers
from chaostolerant.fault.probes import active_faults


def test_an_answer_larger_than_the_cap_is_refused_while_reading(dashboard, configuration, monkeypatch):
    dashboard.replay("breakers-closed")
    monkeypatch.setattr(client, "MAX_ANSWER_BYTES", 1024)
    with pytest.raises(ActivityFailed) as failure:
        breakers(configuration=configuration)
    assert "GET /api/breakers is" in str(failure.value) and "above 1024" in str(failure.value)


def test_an_answer_of_undeclared_length_is_cut_once_past_the_cap(dashboard, configuration, monkeypatch):
    monkeypatch.setattr(client, "MAX_ANSWER_BYTES", 1024)
    dashboard.answer("GET /api/faults", 200, b'{"faults": [' + b"0, " * 2000 + b"0]}", declare_length=False)
    with pytest.raises(ActivityFailed) as failure:
        active_faults(configuration=configuration)
    assert "GET /api/faults is larger than 1024 bytes" in str(failure.value)


def test_a_stalled_dashboard_is_given_up_on_after_the_timeout(dashboard, configuration):
    dashboard.answer("GET /api/faults", 200, b'{"faults": []}', stall_s=2.0)
    with pytest.raises(ActivityFailed) as failure:
        active_faults(configuration={**configuration, "tolerant_timeout": 0.3})
    assert "did not answer GET /api/faults" in str(failure.value)


def test_an_unreachable_dashboard_is_named(secrets):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    with pytest.raises(ActivityFailed) as failure:
        active_faults(configuration={"tolerant_url": url})
    assert f"Tolerant at {url} did not answer GET /api/faults" in str(failure.value)
