"""The game day's load: started with its bounds checked by Tolerant, refused while an experiment runs,
stopped."""

import pytest
from chaoslib.exceptions import ActivityFailed

from chaostolerant.load.actions import start_load, stop_load


def test_start_and_stop(dashboard, configuration, secrets):
    dashboard.replay("load-started", "load-stopped")
    answer = start_load(8, 50, 200, configuration=configuration, secrets=secrets)
    assert answer["load"] == {"users": 8, "think_min_ms": 50, "think_max_ms": 200}
    assert dashboard.received[0].json() == {"users": 8, "think_min_ms": 50, "think_max_ms": 200}
    assert stop_load(configuration=configuration, secrets=secrets) == {"load": None}
    assert dashboard.requests() == ["PUT /api/load", "DELETE /api/load"]


def test_out_of_bounds_users_are_refused_naming_the_field(dashboard, configuration, secrets):
    dashboard.replay("load-refused-users")
    with pytest.raises(ActivityFailed) as failure:
        start_load(0, 50, 200, configuration=configuration, secrets=secrets)
    assert "(400): users: 0 is not between 1 and 500" in str(failure.value)


def test_load_during_an_experiment_is_a_conflict(dashboard, configuration, secrets):
    dashboard.replay("load-refused-running")
    with pytest.raises(ActivityFailed) as failure:
        start_load(8, 50, 200, configuration=configuration, secrets=secrets)
    assert "(409): experiment 1 is running and drives its own load" in str(failure.value)
