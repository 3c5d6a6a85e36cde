"""Tolerant experiments (TOML specs run by the controller): start one and wait; read its figures and the
``[[validate]]`` gate's verdict."""
