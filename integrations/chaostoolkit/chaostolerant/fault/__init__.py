"""Faults on a Tolerant agent: put one, remove one, halt them all; list what the agent holds."""
