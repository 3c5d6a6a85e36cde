"""Breakers: state and counters from the board, waiting for a state, switching the mode."""

import pytest
from chaoslib.exceptions import ActivityFailed

from chaostolerant.breaker.actions import set_breaker_mode
from chaostolerant.breaker.probes import breaker, breaker_state, breakers, wait_for_breaker_state


def test_a_breakers_state_and_counters(dashboard, configuration):
    dashboard.replay("breakers-closed", "breakers-open", "breakers-open")
    assert breaker_state("checkout->payment", configuration=configuration) == "closed"
    tile = breaker("checkout->payment", configuration=configuration)
    assert tile["state"] == "open"
    assert tile["opens"] == 1
    assert tile["failures"] >= 5, "five failures in a row opened it"
    assert set(tile) >= {"calls", "failures", "rejected", "opens", "window", "mode", "config"}
    names = [t["name"] for t in breakers(configuration=configuration)]
    assert "checkout->payment" in names and "frontend->checkout" in names


def test_an_unknown_breaker_is_refused_listing_the_known_ones(dashboard, configuration):
    dashboard.replay("breakers-closed")
    with pytest.raises(ActivityFailed) as failure:
        breaker_state("checkout->bank", configuration=configuration)
    message = str(failure.value)
    assert message.startswith("name: no breaker `checkout->bank`")
    assert "checkout->payment" in message


def test_waiting_reads_the_board_until_the_state_is_reached(dashboard, configuration):
    dashboard.replay("breakers-closed", "breakers-closed", "breakers-open")
    tile = wait_for_breaker_state(
        "checkout->payment", "open", timeout=10, poll_interval=0.1, configuration=configuration
    )
    assert tile["state"] == "open"
    assert dashboard.requests() == ["GET /api/breakers"] * 3


def test_waiting_too_long_fails_with_the_last_state_seen(dashboard, configuration):
    dashboard.replay(*["breakers-closed"] * 10)
    with pytest.raises(ActivityFailed) as failure:
        wait_for_breaker_state(
            "checkout->payment", "open", timeout=0.3, poll_interval=0.1, configuration=configuration
        )
    assert "is still closed after 0.3 s, not open" in str(failure.value)
    assert 2 <= len(dashboard.received) <= 4


@pytest.mark.parametrize(
    "arguments, field",
    [
        ({"state": "ajar"}, "state: `ajar`"),
        ({"state": "open", "timeout": 0}, "timeout: 0"),
        ({"state": "open", "timeout": 99999}, "timeout: 99999"),
        ({"state": "open", "poll_interval": 0.001}, "poll_interval: 0.001"),
    ],
)
def test_wait_bounds_are_checked_before_anything_is_asked(dashboard, configuration, arguments, field):
    with pytest.raises(ActivityFailed) as failure:
        wait_for_breaker_state("checkout->payment", configuration=configuration, **arguments)
    assert str(failure.value).startswith(field)
    assert dashboard.received == []


def test_a_mode_switch_and_a_mode_refused(dashboard, configuration, secrets):
    dashboard.replay("mode-set", "mode-refused")
    assert set_breaker_mode("shadow", "checkout", configuration=configuration, secrets=secrets) == {
        "mode": "shadow"
    }
    assert dashboard.received[0].json() == {"mode": "shadow", "service": "checkout"}
    with pytest.raises(ActivityFailed) as failure:
        set_breaker_mode("sideways", configuration=configuration, secrets=secrets)
    assert "(400): mode: `sideways` is not one of" in str(failure.value)
    assert dashboard.received[1].json() == {"mode": "sideways"}
