"""The review page: a loopback HTTP server over the items of some runs, recording one reviewer's labels.

Nothing of the candidate's app runs here: its screenshots are served as images (PNG/JPEG only, by the
evidence index, never a path the request names), its DOM, console and diff are shown as escaped text, and
every page carries a Content-Security-Policy that lets only this page's own script run (by nonce). A request
whose Host is not this server's loopback address is refused (a page elsewhere cannot reach it by DNS
rebinding), and a label is recorded only with the page's token (no cross-site form can post one).
"""

from __future__ import annotations

import functools
import json
import secrets
import threading
from dataclasses import dataclass, field
from importlib import resources
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

import polars as pl
from jinja2 import Environment, Template, select_autoescape

from codesign.review.items import FILTERS, Evidence, Query
from codesign.runtime.http import LoopbackHandler, LoopbackServer
from codesign.score import labels as stored
from codesign.score.labels import LABEL_VERDICTS, Label
from codesign.store import Store

IMAGE_TYPES = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".webp": "image/webp"}
TEXT_EXCERPT = 6000  # characters of a DOM, log or diff shown inline (the whole file is in the store)
_TEMPLATES = Environment(autoescape=select_autoescape(default=True), trim_blocks=True, lstrip_blocks=True)


@dataclass
class Review:
    """The items under review, their stores, and the labels of ``reviewer`` (kept in the stores)."""

    items: pl.DataFrame
    reviewer: str
    stores: dict[str, Store] = field(default_factory=dict)
    mine: dict[int, Label] = field(default_factory=dict)  # item number -> this reviewer's label
    others: dict[int, list[Label]] = field(default_factory=dict)  # item number -> the other reviewers' labels
    token: str = field(default_factory=lambda: secrets.token_urlsafe(24))
    lock: threading.Lock = field(default_factory=threading.Lock)
    _evidence: dict[tuple[str, str], Evidence] = field(default_factory=dict)

    def __post_init__(self) -> None:
        Label("t", "e", "x", "c", self.reviewer, "PASS").check("--reviewer")
        for uri in dict.fromkeys(self.items["store"].to_list()) if self.items.height else []:
            self.stores[uri] = Store(uri)
        where = {
            (r["trial_key"], r["eval_key"], r["criterion_id"]): r["item"] for r in self.items.iter_rows(named=True)
        }
        for store in self.stores.values():
            for row in stored.load(store).iter_rows(named=True):
                item = where.get((row["trial_key"], row["eval_key"], row["criterion_id"]))
                if item is not None:
                    label = Label(**row)
                    if label.reviewer == self.reviewer:
                        self.mine[item] = label
                    else:
                        self.others.setdefault(item, []).append(label)

    def row(self, item: int) -> dict[str, Any] | None:
        found = self.items.filter(pl.col("item") == item)
        return found.row(0, named=True) if found.height else None

    def evidence(self, row: dict[str, Any]) -> Evidence:
        key = (row["trial_key"], row["eval_key"])
        with self.lock:
            if key not in self._evidence:
                self._evidence[key] = Evidence(self.stores[row["store"]], *key)
            return self._evidence[key]

    def save(self, item: int, verdict: str, note: str) -> Label:
        row = self.row(item)
        if row is None:
            raise KeyError(item)
        label = Label(
            row["trial_key"],
            row["eval_key"],
            row["task_id"],
            row["criterion_id"],
            self.reviewer,
            verdict,
            note.strip()[:4000],
        )
        with self.lock:
            saved = stored.save(self.stores[row["store"]], label)
            self.mine[item] = saved
        return saved


class ReviewHandler(LoopbackHandler):
    review: Review  # set on the subclass the server is made with

    def _allowed(self) -> bool:
        host = self.headers.get("Host", "")
        port = self.server.server_address[1]  # type: ignore[index]
        if host not in (f"127.0.0.1:{port}", f"localhost:{port}"):
            self.send_body(403, "text/plain; charset=utf-8", b"this review server answers on loopback only\n")
            return False
        return True

    def _page(self, template: str, **values: Any) -> None:
        nonce = secrets.token_urlsafe(16)
        html = _template(template).render(nonce=nonce, reviewer=self.review.reviewer, **values)
        policy = (
            f"default-src 'none'; img-src 'self'; style-src 'nonce-{nonce}'; script-src 'nonce-{nonce}'; "
            "form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
        )
        headers = {"Content-Security-Policy": policy, "X-Content-Type-Options": "nosniff", "Cache-Control": "no-store"}
        self.send_body(200, "text/html; charset=utf-8", html.encode(), headers)

    def do_GET(self) -> None:
        if not self._allowed():
            return
        url = urlsplit(self.path)
        params = dict(parse_qsl(url.query))
        parts = [p for p in url.path.split("/") if p]
        if not parts:
            return self._list(Query.parse(params))
        if parts[0] == "item" and len(parts) == 2 and parts[1].isdigit():
            return self._item(int(parts[1]), Query.parse(params), params.get("saved") == "1")
        if parts[0] == "file" and len(parts) == 3 and parts[1].isdigit():
            return self._file(int(parts[1]), parts[2])
        if parts == ["favicon.ico"]:  # asked for by every browser: none, without an error in its console
            return self.send_body(204, "image/x-icon", b"")
        self.send_body(404, "text/plain; charset=utf-8", b"not found\n")

    def do_POST(self) -> None:
        if not self._allowed():
            return
        if urlsplit(self.path).path != "/label":
            return self.send_body(404, "text/plain; charset=utf-8", b"not found\n")
        length = int(self.headers.get("Content-Length") or 0)
        form = dict(parse_qsl(self.rfile.read(min(length, 100_000)).decode("utf-8", "replace")))
        if not secrets.compare_digest(form.get("token", ""), self.review.token):
            return self.send_body(403, "text/plain; charset=utf-8", b"stale page: reload it\n")
        item, verdict = form.get("item", ""), form.get("verdict", "")
        if not item.isdigit() or verdict not in LABEL_VERDICTS or self.review.row(int(item)) is None:
            return self.send_body(400, "text/plain; charset=utf-8", b"expected an item and a verdict\n")
        self.review.save(int(item), verdict, form.get("note", ""))
        query = Query.parse(dict(parse_qsl(form.get("query", ""))))
        shown = query.apply(self.review.items, set(self.review.mine))["item"].to_list()
        following = [i for i in shown if i > int(item)]  # with "not yet reviewed", the saved one has left the list
        target = f"/item/{following[0]}" if following else "/"
        self.send_body(303, "text/plain; charset=utf-8", b"", {"Location": _with_query(target, query, saved=True)})

    def _list(self, query: Query) -> None:
        review = self.review
        shown = query.apply(review.items, set(review.mine))
        choices = {
            k: sorted({str(v) for v in review.items[k].to_list() if v is not None})
            for k in FILTERS
            if review.items.height
        }
        rows = [
            {
                **r,
                "label": review.mine[r["item"]].verdict if r["item"] in review.mine else "",
                "href": _with_query(f"/item/{r['item']}", query),
            }
            for r in shown.iter_rows(named=True)
        ]
        done = sum(r["label"] != "" for r in rows)
        self._page(
            "list.html",
            rows=rows,
            query=query,
            choices=choices,
            done=done,
            total=review.items.height,
            labelled=len(review.mine),
            unreviewed_href=_with_query("/", query),
        )

    def _item(self, item: int, query: Query, saved: bool) -> None:
        review = self.review
        row = review.row(item)
        if row is None:
            return self.send_body(404, "text/plain; charset=utf-8", b"no such item\n")
        evidence = review.evidence(row)
        task = evidence.loaded_task
        criterion = next((c for c in task.criteria if c.id == row["criterion_id"]), None) if task else None
        cited_ids = list(row["evidence_ids"] or [])
        shown = [self._evidence_view(item, evidence, evidence.items[i]) for i in cited_ids if i in evidence.items]
        missing = [i for i in cited_ids if i not in evidence.items]
        screenshots = [
            e
            for e in evidence.items.values()
            if e["kind"] == "screenshot"
            and e["id"].startswith("shot:")
            and e["id"].count(":") == 1
            and e["id"] not in cited_ids
        ]
        uncited = [
            self._evidence_view(item, evidence, e)
            for e in evidence.items.values()
            if e["id"] not in cited_ids and e not in screenshots
        ]
        order = query.apply(review.items, set(review.mine) - {item})["item"].to_list()
        at = order.index(item) if item in order else None
        step = lambda k: _with_query(f"/item/{order[k]}", query) if at is not None and 0 <= k < len(order) else None  # noqa: E731
        refutation = json.loads(row["refutation"]) if row.get("refutation") else None
        self._page(
            "item.html",
            row=row,
            task=task,
            criterion=criterion,
            cited=shown,
            missing=missing,
            screenshots=[self._evidence_view(item, evidence, e) for e in screenshots],
            uncited=uncited,
            refutation=refutation,
            label=review.mine.get(item),
            others=review.others.get(item, []),
            verdicts=LABEL_VERDICTS,
            token=review.token,
            query=urlencode(query.params()),
            position=(at + 1 if at is not None else None),
            count=len(order),
            saved=saved,
            previous=step(at - 1) if at is not None else None,
            next=step(at + 1) if at is not None else None,
            back=_with_query("/", query),
            done=len(review.mine),
        )

    def _evidence_view(self, item: int, evidence: Evidence, entry: dict[str, Any]) -> dict[str, Any]:
        """An evidence item as the page shows it: an image URL, or escaped text (an excerpt), never markup."""
        path = entry.get("path") or ""
        suffix = path[path.rfind(".") :].lower() if "." in path else ""
        view: dict[str, Any] = {
            "id": entry["id"],
            "kind": entry["kind"],
            "route": entry.get("route"),
            "viewport": entry.get("viewport"),
            "image": None,
            "text": None,
        }
        if suffix in IMAGE_TYPES:
            view["image"] = f"/file/{item}/{_quote_id(entry['id'])}"
        elif path:
            data = evidence.read(path)
            view["text"] = data.decode("utf-8", "replace")[:TEXT_EXCERPT] if data is not None else "(not stored)"
        data = entry.get("data")
        if data not in (None, "", [], {}):
            view["data"] = json.dumps(data, indent=1, ensure_ascii=False, default=str)[:TEXT_EXCERPT]
            shot = data.get("screenshot") if isinstance(data, dict) else None
            if isinstance(shot, str) and shot[shot.rfind(".") :].lower() in IMAGE_TYPES:
                view["image"] = f"/file/{item}/{_quote_id(entry['id'])}"
        return view

    def _file(self, item: int, quoted_id: str) -> None:
        """The image of an evidence item, found by its id in the evaluation's own index."""
        row = self.review.row(item)
        entry = self.review.evidence(row).items.get(_unquote_id(quoted_id)) if row else None
        path = (entry or {}).get("path") or ""
        if entry and not path.lower().endswith(tuple(IMAGE_TYPES)) and isinstance(entry.get("data"), dict):
            path = entry["data"].get("screenshot") or ""
        kind = IMAGE_TYPES.get(path[path.rfind(".") :].lower()) if "." in path else None
        data = self.review.evidence(row).read(path) if row and kind else None
        if data is None or kind is None:
            return self.send_body(404, "text/plain; charset=utf-8", b"no such image\n")
        headers = {
            "X-Content-Type-Options": "nosniff",
            "Content-Security-Policy": "default-src 'none'",
            "Cache-Control": "private, max-age=3600",
        }
        self.send_body(200, kind, data, headers)


@functools.cache
def _template(name: str) -> Template:
    """A page template, read and compiled once per process (not per request)."""
    return _TEMPLATES.from_string(resources.files("codesign.review").joinpath(f"templates/{name}").read_text())


def _quote_id(evidence_id: str) -> str:
    return evidence_id.encode().hex()  # ids hold ':', '/', '@': hex keeps the URL a single plain segment


def _unquote_id(quoted: str) -> str:
    try:
        return bytes.fromhex(quoted).decode()
    except ValueError:
        return ""


def _with_query(path: str, query: Query, saved: bool = False) -> str:
    params = query.params() | ({"saved": "1"} if saved else {})
    return f"{path}?{urlencode(params)}" if params else path


def serve(review: Review, port: int = 0) -> LoopbackServer:
    """Start serving ``review`` on 127.0.0.1 (``port`` 0: a free one); ``.url`` says where, ``.stop()`` ends it."""
    handler = type("BoundReviewHandler", (ReviewHandler,), {"review": review})
    server = LoopbackServer(handler, port)
    return server.start("codesign-review")
