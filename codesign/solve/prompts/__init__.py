"""Prompt files of the solvers, versioned with the code."""

from importlib import resources


def load(name: str) -> str:
    return resources.files(__name__).joinpath(name).read_text()
