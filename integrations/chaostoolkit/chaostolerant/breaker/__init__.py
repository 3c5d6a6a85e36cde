"""The breakers of the testbed: switch their mode; read their state and counters, wait for a state."""
