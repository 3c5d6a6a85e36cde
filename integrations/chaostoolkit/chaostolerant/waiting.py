"""The bounds of every wait an activity does (for a breaker's state, for a Tolerant experiment's end)."""

from typing import Tuple

from chaoslib.exceptions import ActivityFailed

__all__ = ["checked_wait"]


def checked_wait(
    timeout: float, poll_interval: float, most_s: float, least_poll_s: float
) -> Tuple[float, float]:
    """``(timeout, poll_interval)`` as seconds once ``timeout`` is in (0, ``most_s``] and ``poll_interval``
    in [``least_poll_s``, ``timeout``]; an activity failure naming the argument otherwise."""
    try:
        timeout_s, poll_s = float(timeout), float(poll_interval)
    except (TypeError, ValueError):
        raise ActivityFailed(
            f"timeout: `{timeout}` and poll_interval: `{poll_interval}` must be numbers of seconds"
        ) from None
    if not 0 < timeout_s <= most_s:
        raise ActivityFailed(f"timeout: {timeout} is not in (0, {most_s:g}] seconds")
    if not least_poll_s <= poll_s <= timeout_s:
        raise ActivityFailed(
            f"poll_interval: {poll_interval} is not in [{least_poll_s:g}, timeout] seconds"
        )
    return timeout_s, poll_s
