"""Faults: put, remove, halt and list, against recorded dashboard answers; Tolerant's refusals (400 naming the
field, 401) become activity failures carrying its message."""

import pytest
from chaoslib.exceptions import ActivityFailed

from chaostolerant.fault.actions import halt, put_fault, remove_fault
from chaostolerant.fault.probes import active_faults, fault_count
from conftest import TOKEN, bearer

OUTAGE = "/api/faults/payment-outage?target=payment"


def test_put_fault_sends_the_agents_document_with_the_token(dashboard, configuration, secrets):
    dashboard.replay("fault-put")
    answer = put_fault(
        fault_id="payment-outage", status=503, lease="120s", configuration=configuration, secrets=secrets
    )
    assert answer == {"id": "payment-outage"}
    (request,) = dashboard.received
    assert f"{request.method} {request.path}" == f"PUT {OUTAGE}"
    assert bearer(request) == f"Bearer {TOKEN}"
    assert request.json() == {"kind": "error", "status": 503, "rate": 1.0, "lease": "120s"}


def test_a_delay_fault_with_a_match_rule_carries_them(dashboard, configuration, secrets):
    dashboard.replay("fault-put")
    put_fault(
        fault_id="payment-outage",
        kind="delay",
        delay="800ms",
        jitter="100ms",
        rate=0.5,
        match={"method": "POST", "path_prefix": "/charge"},
        lease=None,
        configuration=configuration,
        secrets=secrets,
    )
    assert dashboard.received[0].json() == {
        "kind": "delay",
        "rate": 0.5,
        "delay": "800ms",
        "jitter": "100ms",
        "match": {"method": "POST", "path_prefix": "/charge"},
    }


def test_a_field_tolerant_refuses_is_an_activity_failure_naming_it(dashboard, configuration, secrets):
    dashboard.replay("fault-refused-status")
    with pytest.raises(ActivityFailed) as failure:
        put_fault(fault_id="payment-outage", status=200, configuration=configuration, secrets=secrets)
    assert "(400): status: 200 is not an error status" in str(failure.value)


def test_a_wrong_token_is_an_activity_failure_saying_so(dashboard, configuration):
    dashboard.replay("fault-unauthorized")
    with pytest.raises(ActivityFailed) as failure:
        put_fault(
            fault_id="payment-outage",
            configuration=configuration,
            secrets={"tolerant_token": "not-the-token"},
        )
    assert "(401): the token is wrong" in str(failure.value)


def test_an_action_without_a_token_sends_nothing(dashboard, configuration):
    with pytest.raises(ActivityFailed) as failure:
        put_fault(configuration=configuration, secrets={})
    assert str(failure.value).startswith("secrets: tolerant_token is missing")
    assert dashboard.received == []


@pytest.mark.parametrize(
    "configuration, field",
    [
        ({}, "configuration: tolerant_url is missing"),
        ({"tolerant_url": "ftp://127.0.0.1:1"}, "is not an http:// or https:// URL"),
        ({"tolerant_url": "http://127.0.0.1:1/?x=1"}, "without a query"),
        ({"tolerant_url": "http://127.0.0.1:1", "tolerant_timeout": 0}, "tolerant_timeout 0.0 is not in"),
        ({"tolerant_url": "http://127.0.0.1:1", "tolerant_timeout": "soon"}, "tolerant_timeout `soon`"),
    ],
)
def test_a_bad_configuration_names_its_key(configuration, field, secrets):
    with pytest.raises(ActivityFailed) as failure:
        halt(configuration=configuration, secrets=secrets)
    assert field in str(failure.value)


def test_remove_fault_and_a_fault_already_gone(dashboard, configuration, secrets):
    dashboard.replay("fault-removed", "fault-remove-missing")
    assert remove_fault("payment-outage", configuration=configuration, secrets=secrets) == {
        "cleared": True,
        "id": "payment-outage",
    }
    with pytest.raises(ActivityFailed) as failure:
        remove_fault("payment-outage", configuration=configuration, secrets=secrets)
    assert "id: no active fault with id `payment-outage`" in str(failure.value)
    assert [bearer(r) for r in dashboard.received] == [f"Bearer {TOKEN}"] * 2


def test_halt_posts_to_the_dashboard(dashboard, configuration, secrets):
    dashboard.replay("halted")
    assert halt(configuration=configuration, secrets=secrets) == {"halted": True}
    assert dashboard.requests() == ["POST /api/halt"]


def test_the_active_faults_are_the_agents(dashboard, configuration):
    dashboard.replay("faults-one", "faults-one", "faults-none")
    (fault,) = active_faults(configuration=configuration)
    assert fault["id"] == "payment-outage"
    assert fault["fault"]["status"] == 503
    assert fault_count(fault_id="payment-outage", configuration=configuration) == 1
    assert fault_count(configuration=configuration) == 0
    # Reads are open: no token is sent.
    assert all(bearer(r) is None for r in dashboard.received)
