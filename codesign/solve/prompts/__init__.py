"""Prompt files of the solvers, versioned with the code."""

import functools
from importlib import resources
from typing import Any

from jinja2 import StrictUndefined, Template, Undefined


def load(name: str) -> str:
    """A prompt file's text, read at each call: an edited file changes the solve's key at once."""
    return _folder().joinpath(name).read_text()


@functools.cache
def _folder() -> Any:
    return resources.files(__name__)  # finding the package's folder costs more than reading the file


@functools.lru_cache(maxsize=64)
def _compiled(source: str, strict: bool) -> Template:
    # Compiling a template costs ~3 ms of CPU; every trial of a run renders the same few prompts.
    return Template(source, undefined=StrictUndefined if strict else Undefined)


def render(source: str, strict: bool = True, **values: Any) -> str:
    """A prompt template rendered with ``values``; ``strict``: a name it uses but is not given is an error."""
    return _compiled(source, strict).render(**values)
