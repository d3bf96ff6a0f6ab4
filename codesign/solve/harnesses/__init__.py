"""Harnesses: the agent loops that drive a model (native; others arrive as configs)."""
