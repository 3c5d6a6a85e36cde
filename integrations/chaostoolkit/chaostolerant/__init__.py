"""Chaos Toolkit extension for Tolerant: faults on Tolerant's agent, breaker modes, the game day's load and
Tolerant experiments as actions; breaker states and counters, active faults, experiment figures and the
``[[validate]]`` gate's verdict as probes; a control that halts Tolerant at the end of every experiment."""

from typing import List

from chaoslib.discovery.discover import (
    discover_actions,
    discover_probes,
    initialize_discovery_result,
)
from chaoslib.types import DiscoveredActivities, Discovery

__all__ = ["__version__", "discover"]
__version__ = "0.1.0"

#: The modules of actions, one per concept.
ACTION_MODULES = (
    "chaostolerant.fault.actions",
    "chaostolerant.breaker.actions",
    "chaostolerant.load.actions",
    "chaostolerant.experiment.actions",
)
#: The modules of probes (the load has none: the breakers and faults say what it does).
PROBE_MODULES = (
    "chaostolerant.fault.probes",
    "chaostolerant.breaker.probes",
    "chaostolerant.experiment.probes",
)


def discover(discover_system: bool = True) -> Discovery:
    """Every action and probe this extension offers, for ``chaos discover chaostoolkit-tolerant``; the
    extension discovers no system (Tolerant's dashboard lists its own breakers and faults)."""
    discovery = initialize_discovery_result("chaostoolkit-tolerant", __version__, "tolerant")
    discovery["activities"].extend(load_exported_activities())
    return discovery


def load_exported_activities() -> List[DiscoveredActivities]:
    """The activities of every module of :data:`ACTION_MODULES` and :data:`PROBE_MODULES`."""
    activities: List[DiscoveredActivities] = []
    for module in ACTION_MODULES:
        activities.extend(discover_actions(module))
    for module in PROBE_MODULES:
        activities.extend(discover_probes(module))
    return activities
