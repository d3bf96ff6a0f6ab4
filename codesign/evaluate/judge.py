"""LLM judging: the consultation of a judge or verifier about one criterion, and its strict JSON verdict.

A judge (or verifier) is any codesign :class:`Model`. It sees the request, one criterion and the
evidence selected for that criterion — untrusted app output always fenced as quoted data with a random
boundary the app cannot forge — and may act in the served app through browser tools; every action is
recorded as evidence it can cite. Its final reply must be one JSON object; malformed replies are
retried, then recorded as an evaluator error (never a PASS).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import json
import os
import re
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from codesign._protocols import Model
from codesign._types import weaker_cost_source
from codesign.evaluate.judge_tools import BROWSER_TOOLS, BrowserTools
from codesign.runtime.clock import WorkClock

# A reason that says nothing: a template placeholder or a filler word.
_PLACEHOLDER = re.compile(r"<[^<>]*>|\.\.\.|…|(why|reason|because|n/?a|none|todo|tbd|ok|seen|yes|no)\W*", re.I)


def _specific(reason: str) -> str:
    reason = reason.strip()
    if _PLACEHOLDER.fullmatch(reason) or len(reason.split()) < 3:
        raise ValueError(f"the reason {reason!r} says nothing specific: name what the evidence shows")
    return reason


class JudgeReply(BaseModel):
    model_config = ConfigDict(extra="forbid")
    verdict: Literal["PASS", "PARTIAL", "FAIL"]
    reason: Annotated[str, AfterValidator(_specific)]
    failure_category: str | None = None
    evidence_ids: list[str] = Field(default_factory=list)


class VerifierReply(BaseModel):
    model_config = ConfigDict(extra="forbid")
    refuted: bool
    verdict: Literal["PARTIAL", "FAIL"] | None = None
    reason: Annotated[str, AfterValidator(_specific)]
    evidence_ids: list[str] = Field(default_factory=list)


@dataclass
class CallStats:
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    cost_source: str = "none"
    format_retries: int = 0
    abandoned: int = 0  # calls cancelled on the time bound (their prompt's cost is charged, as an estimate)
    structured: str = "off"  # json_schema: replies asked for by schema; fallback: the provider refused it


@dataclass
class Consultation:
    """One judge or verifier conversation about one criterion."""

    reply: BaseModel | None  # None: no valid reply after the retries (an evaluator error)
    error: str | None
    actions: list[str] = field(default_factory=list)  # evidence ids of the actions it took
    transcript: list[dict[str, Any]] = field(default_factory=list)


def prompt(name: str) -> str:
    """A judge or verifier prompt: a file of ``codesign/evaluate/prompts/`` by name (``judge_v1.md``), or a
    prompt file of your own by its path (``evaluator.judge_prompt=/path/to/judge.md``)."""
    own = Path(name).expanduser()
    if own.suffix and (own.is_absolute() or os.sep in name) and own.is_file():
        return own.read_text()
    return resources.files("codesign.evaluate.prompts").joinpath(name).read_text()


def parse_reply(text: str | None, schema: type[BaseModel]) -> BaseModel:
    """The reply as the schema's object. The whole reply must be that one JSON object (a ```json fence around
    it is allowed, nothing else): text around it — a refusal that quotes an example, a second object — is a
    malformed reply, never a verdict. Raises ValueError."""
    text = (text or "").strip()
    fenced = re.fullmatch(r"```(?:json)?\s*(.*?)\s*```", text, re.S)
    candidate = fenced.group(1) if fenced else text
    if not (candidate.startswith("{") and candidate.endswith("}")):
        raise ValueError("the reply is not exactly one JSON object")
    try:
        return schema.model_validate(json.loads(candidate))
    except json.JSONDecodeError as e:
        raise ValueError(f"not valid JSON: {e}") from None
    except ValidationError as e:
        raise ValueError("; ".join(f"{'.'.join(map(str, err['loc']))}: {err['msg']}" for err in e.errors())) from None


def refuses_schema(error: BaseException) -> bool:
    """A provider's refusal of ``response_format`` (a 400 or litellm's unsupported-parameter error), as
    opposed to any other failure of the call."""
    if type(error).__name__ == "UnsupportedParamsError":
        return True
    text = str(error).lower()
    return getattr(error, "status_code", None) == 400 and ("response_format" in text or "json_schema" in text)


# Judges' own threads, for a model without a coroutine (``aquery``): never the pool solves hold for their whole
# run, so a judge's call never queues behind them. Sized for the calls of several evaluations in flight.
_JUDGE_THREADS = concurrent.futures.ThreadPoolExecutor(64, thread_name_prefix="codesign-judge")
WATCH_S = 0.5  # how often a call's time bound is re-read (time stopped while queueing does not count)


class CallTimeout(Exception):
    """A consultation ran out of its working time (``criterion_timeout_s``) during a model call."""


@dataclass
class Consultant:
    """A judge or a verifier: a model, its prompt, and its limits."""

    model: Model
    system_prompt: str
    schema: type[BaseModel]
    stats: CallStats
    max_actions: int = 8
    max_format_retries: int = 2
    max_calls: int = 12  # model calls for one criterion; reaching it leaves the criterion ungraded
    timeout_s: float = 600.0  # working time for one criterion (calls and actions, not queues); likewise
    structured: bool = False  # ask for the reply by JSON schema (response_format); parsed strictly either way

    def __post_init__(self) -> None:
        if self.structured:
            self.stats.structured = "json_schema"

    def response_format(self) -> dict[str, Any] | None:
        """The reply's JSON schema as litellm's ``response_format``, while the provider accepts it."""
        if not self.structured:
            return None
        schema = {"name": self.schema.__name__, "schema": self.schema.model_json_schema(), "strict": False}
        return {"type": "json_schema", "json_schema": schema}

    async def consult(self, user: dict[str, Any], tools: BrowserTools) -> Consultation:
        messages: list[dict[str, Any]] = [{"role": "system", "content": self.system_prompt}, user]
        transcript: list[dict[str, Any]] = []
        retries = asked = 0
        clock = WorkClock(self.timeout_s)
        out_of_time = f"no verdict within {self.timeout_s:.0f} s of work"
        while True:
            if asked >= self.max_calls:
                return Consultation(
                    None, f"no verdict within {self.max_calls} model calls", list(tools.ids), transcript
                )
            offer = BROWSER_TOOLS if tools.count < tools.max_actions else []
            try:
                asked += 1
                reply = await self._call(messages, offer, clock)
            except CallTimeout:
                return Consultation(None, out_of_time, list(tools.ids), transcript)
            except Exception as e:
                if not (self.structured and refuses_schema(e)):
                    raise
                # The provider does not take a schema: ask again as before, strictly parsed, and say so.
                self.structured, self.stats.structured = False, "fallback"
                transcript.append({"structured_refused": str(e)[:500]})
                asked -= 1
                continue
            self._account(reply)
            message = {k: v for k, v in reply.message.items() if v is not None}
            messages.append(message)
            transcript.append({"assistant": message})
            calls = message.get("tool_calls") or []
            if calls:
                shown: list[dict[str, Any]] = []
                for call in calls:
                    try:
                        args = json.loads(call["function"].get("arguments") or "{}")
                    except json.JSONDecodeError:
                        args = {}
                    if clock.left() <= 0:
                        return Consultation(None, out_of_time, list(tools.ids), transcript)
                    text, parts = await tools.run(call["function"]["name"], args)
                    messages.append({"role": "tool", "tool_call_id": call["id"], "content": text})
                    transcript.append({"tool": call["function"]["name"], "args": args, "result": text})
                    shown += parts
                if shown:
                    messages.append({"role": "user", "content": [{"type": "text", "text": "Screenshots:"}, *shown]})
                continue
            try:
                return Consultation(parse_reply(message.get("content"), self.schema), None, list(tools.ids), transcript)
            except ValueError as e:
                if retries >= self.max_format_retries:
                    return Consultation(
                        None, f"malformed reply after {retries + 1} attempts: {e}", list(tools.ids), transcript
                    )
                retries += 1
                self.stats.format_retries += 1
                messages.append(
                    {
                        "role": "user",
                        "content": f"Your reply is not the required JSON object ({e}). "
                        "Reply with ONLY the JSON object.",
                    }
                )

    async def _call(self, messages: list[dict[str, Any]], offer: list[dict[str, Any]], clock: WorkClock) -> Any:
        """One model call within the clock's time: its queues (a thread, an endpoint slot, a back-off) do not
        count. Past the time, the call is cancelled — a coroutine's at once, its endpoint slot given back —
        and what sending it cost is charged (:raises CallTimeout:)."""
        shape = self.response_format()
        extra = {"response_format": shape} if shape else {}
        with clock.current():  # queueing code below stops this clock (codesign.runtime.clock)
            if hasattr(self.model, "aquery"):
                call: asyncio.Future[Any] = asyncio.ensure_future(self.model.aquery(messages, offer, **extra))
            else:  # a model without a coroutine: on the judges' own threads, the clock stopped until one runs it
                clock.stop()

                def work() -> Any:
                    clock.start()
                    return self.model.query(messages, offer, **extra)

                running = contextvars.copy_context()
                call = asyncio.get_running_loop().run_in_executor(_JUDGE_THREADS, running.run, work)
        try:
            while not call.done():
                left = clock.left()
                if left <= 0:
                    raise CallTimeout
                await asyncio.wait({call}, timeout=min(left, WATCH_S))
            return call.result()
        except CallTimeout:
            call.cancel()  # a coroutine stops now; a thread's call cannot be stopped: its reply is charged later
            if not hasattr(self.model, "aquery"):
                call.add_done_callback(self._charge_late)
            self._charge_abandoned(messages, offer)
            raise
        finally:
            clock.start()

    def _charge_abandoned(self, messages: list[dict[str, Any]], offer: list[dict[str, Any]]) -> None:
        """A call abandoned on its time bound: the provider got the prompt and may bill it."""
        self.stats.abandoned += 1
        if hasattr(self.model, "prompt_cost"):
            cost, source = self.model.prompt_cost(messages, offer)
            if cost is not None:
                self.stats.cost_usd += cost
            self.stats.cost_source = weaker_cost_source(self.stats.cost_source, source)

    def _charge_late(self, call: asyncio.Future[Any]) -> None:
        if not call.cancelled() and call.exception() is None:
            self._account(call.result())

    def _account(self, reply: Any) -> None:
        s = self.stats
        s.calls += 1
        s.input_tokens += reply.usage.input_tokens
        s.output_tokens += reply.usage.output_tokens
        if reply.cost_usd is not None:
            s.cost_usd += reply.cost_usd
        s.cost_source = weaker_cost_source(s.cost_source, reply.cost_source)
