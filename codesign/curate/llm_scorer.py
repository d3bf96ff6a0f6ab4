"""An LLM scorer for the two judgements heuristics make least well — structural difficulty and verifiability —
through litellm, with any model config. Replies are cached on disk by everything that decides them (the model,
its settings, the prompt file, the query), spending stops at a budget, and a reply that is not a valid rating
(after one re-ask) leaves the heuristic score in place, saying so: the scorer's failure never becomes a score.
The candidates table names the scorer of every value (``llm:<model>:<prompt>@<hash>`` or ``heuristic``)."""

from __future__ import annotations

import hashlib
import json
import re
import threading
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from jinja2 import StrictUndefined, Template

from codesign.curate.records import Query

JSON_OBJECT = re.compile(r"\{.*\}", re.S)


@dataclass(frozen=True)
class Rating:
    difficulty: int
    verifiability: int
    reason: str
    cost_usd: float = 0.0
    cached: bool = False


@dataclass
class LLMScorer:
    model: Any  # a LitellmModel (codesign.solve.models.litellm_model), built from a model config
    prompt_file: str = "score_v1.md"
    cache_dir: Path | None = None  # None: no cache
    max_cost_usd: float | None = None  # None: no budget
    max_format_retries: int = 1
    spent_usd: float = 0.0
    calls: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __post_init__(self) -> None:
        self.prompt = resources.files("codesign.curate.prompts").joinpath(self.prompt_file).read_text()
        self.template = Template(self.prompt, undefined=StrictUndefined)

    @property
    def name(self) -> str:
        digest = hashlib.sha256(self.prompt.encode()).hexdigest()[:8]
        return f"llm:{getattr(self.model, 'name', 'model')}:{Path(self.prompt_file).stem}@{digest}"

    def budget_spent(self) -> bool:
        return self.max_cost_usd is not None and self.spent_usd >= self.max_cost_usd

    def rate(self, q: Query, history: list[str], patch: str) -> Rating | str:
        """A rating, or why there is none (the budget, or no valid reply): the caller keeps the heuristic."""
        files = len({e.path for e in q.edits or []})
        lines = sum(e.changed_lines for e in q.edits or [])
        text = self.template.render(request=q.text, history=history, files=files, lines=lines, patch=patch[:6000])
        messages: list[dict[str, Any]] = [{"role": "user", "content": text}]
        key = self._key(messages)
        cached = self._cached(key)
        if cached is not None:
            return cached
        problem = "no reply"
        for _ in range(self.max_format_retries + 1):
            with self._lock:
                if self.budget_spent():
                    return f"the scorer's budget of {self.max_cost_usd} USD is spent"
                self.calls += 1
            try:
                reply = self.model.query(messages, [])
            except Exception as e:  # an endpoint that failed: the heuristic stays, the reason is recorded
                return f"the scorer's call failed: {type(e).__name__}: {str(e)[:200]}"
            with self._lock:
                self.spent_usd += reply.cost_usd or 0.0
            content = str(reply.message.get("content") or "")
            rating, problem = parse(content)
            if rating is not None:
                rating = Rating(rating.difficulty, rating.verifiability, rating.reason, reply.cost_usd or 0.0)
                self._keep(key, rating)
                return rating
            messages += [{"role": "assistant", "content": content},
                         {"role": "user", "content": f"{problem}. Reply with ONLY the JSON object."}]  # fmt: skip
        return f"the scorer gave no valid rating: {problem}"

    def _key(self, messages: list[dict[str, Any]]) -> str:
        settings = {k: getattr(self.model, k, None) for k in ("model", "temperature", "max_tokens", "seed", "extra")}
        blob = json.dumps([settings, messages], sort_keys=True, default=str)
        return hashlib.sha256(blob.encode()).hexdigest()

    def _cached(self, key: str) -> Rating | None:
        if self.cache_dir is None or not (self.cache_dir / f"{key}.json").is_file():
            return None
        data = json.loads((self.cache_dir / f"{key}.json").read_text())
        return Rating(data["difficulty"], data["verifiability"], data["reason"], 0.0, cached=True)

    def _keep(self, key: str, rating: Rating) -> None:
        if self.cache_dir is None:
            return
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        tmp = self.cache_dir / f".{key}.{threading.get_ident()}.tmp"
        tmp.write_text(json.dumps({"difficulty": rating.difficulty, "verifiability": rating.verifiability,
                                   "reason": rating.reason}))  # fmt: skip
        tmp.replace(self.cache_dir / f"{key}.json")


def parse(content: str) -> tuple[Rating | None, str]:
    """A rating from a reply, or what is wrong with it."""
    match = JSON_OBJECT.search(content)
    if not match:
        return None, "the reply holds no JSON object"
    try:
        data = json.loads(match.group(0))
    except json.JSONDecodeError as e:
        return None, f"the JSON does not parse ({e.msg})"
    d, v = data.get("difficulty"), data.get("verifiability")
    if not isinstance(d, int) or isinstance(d, bool) or not 1 <= d <= 5:
        return None, f"difficulty must be an integer 1-5, not {d!r}"
    if not isinstance(v, int) or isinstance(v, bool) or not 1 <= v <= 3:
        return None, f"verifiability must be an integer 1-3, not {v!r}"
    return Rating(d, v, str(data.get("reason") or "")[:500]), ""


def edits_patch(q: Query) -> str:
    """The query's edits as one unified diff (paths as the log gives them), for the scorer to read."""
    import difflib

    chunks = []
    for e in q.edits or []:
        before, after = (e.before or "").splitlines(keepends=True), (e.after or "").splitlines(keepends=True)
        chunks.append("".join(difflib.unified_diff(before, after, f"a/{e.path}", f"b/{e.path}")))
    return "".join(chunks)
