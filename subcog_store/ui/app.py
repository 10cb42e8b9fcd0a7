"""`subcog-store ui`: a local page to see and fix what is stored (Starlette on uvicorn, loopback only).

One store connection, one request at a time on it (a lock; the settings are read again for each request); the
model is loaded in this process on the first search and kept. Every request passes `guard.Guard` first. Actions
(confirm, reverse, forget) are the CLI's own logged, reversible operations, answered by a redirect to the page
they came from with what was done.
"""
# Lazy imports: the store, the model choice and the review operations load with the first request needing them.
from __future__ import annotations

import secrets
import socket
import threading
from pathlib import Path
from typing import Any, Callable
from urllib.parse import parse_qsl, urlencode, urlsplit

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from subcog_store.errors import SubcogError
from subcog_store.ui import pages, views
from subcog_store.ui.guard import MAX_BODY, Guard


class Site:
    """The store behind the pages, used by one request at a time."""

    def __init__(self, db: Path, token: str):
        self.db, self.token = db, token
        self._store = None
        self._lock = threading.Lock()

    def run(self, job: Callable[[Any], Any]) -> Any:
        from subcog_store.store import Store

        with self._lock:
            if self._store is None:
                self._store = Store(self.db)
            else:
                self._store.settings = self._store.load_settings()
            return job(self._store)

    def close(self) -> None:
        with self._lock:
            if self._store is not None:
                self._store.close()
                self._store = None


def _int(value: str | None) -> int:
    return int(value) if value and value.isdigit() and len(value) < 10 else 0


def build(site: Site) -> Starlette:
    """The pages and actions (the guard wraps the result)."""
    def html(title: str, body: str, active: str, request: Request, status: int = 200) -> HTMLResponse:
        return HTMLResponse(pages.page(title, body, active, request.query_params.get("done"),
                                       request.query_params.get("error")), status)

    def failed(request: Request, error: SubcogError, active: str) -> HTMLResponse:
        return html("Not possible", f"<p>{pages.esc(error)}</p>", active, request, getattr(error, "status", 400))

    def home(request: Request) -> Response:
        rows = site.run(views.projects)
        return html("Projects", pages.projects(rows), "projects", request)

    def project(request: Request) -> Response:
        p = request.query_params
        domain, namespace, state = p.get("domain", ""), p.get("namespace") or None, p.get("state", "current")
        offset = _int(p.get("offset"))
        spaces, memories = site.run(lambda s: (views.namespaces(s, domain), views.memories(
            s, domain, namespace, state, offset)))
        return html(f"Project {domain}", pages.project(domain, spaces, memories, namespace, state, offset,
                                                       views.PAGE), "projects", request)

    def memory(request: Request) -> Response:
        try:
            detail = site.run(lambda s: views.memory(s, request.path_params["id"]))
        except SubcogError as e:
            return failed(request, e, "projects")
        return html(f"Memory {detail['memory'].id}", pages.memory(detail, site.token), "projects", request)

    def search(request: Request) -> Response:
        p = request.query_params
        query, domain, namespace = p.get("q", ""), p.get("domain", ""), p.get("namespace", "")

        def job(store):
            names = [r["domain"] for r in views.projects(store)]
            chosen = domain or (names[0] if names else "")
            spaces = [r["namespace"] for r in views.namespaces(store, chosen)] if chosen else []
            found = views.search(store, query, chosen, namespace) if query.strip() and chosen else None
            return names, chosen, spaces, found
        try:
            names, chosen, spaces, found = site.run(job)
        except SubcogError as e:
            return failed(request, e, "search")
        body = pages.search_form(query, chosen, namespace, names, spaces)
        if found is not None:
            body += pages.search_results(found, views.formula())
        return html("Search as the hooks do", body, "search", request)

    def decisions(request: Request) -> Response:
        p = request.query_params
        show_all, offset = p.get("show") == "all", _int(p.get("offset"))
        rows = site.run(lambda s: views.decisions(s, show_all, p.get("domain"), offset))
        switch = pages.link("/decisions", "waiting for review" if show_all else "every decision",
                            **({} if show_all else {"show": "all"}))
        more = pages.link("/decisions", "older", show="all" if show_all else None,
                          offset=offset + views.PAGE) if len(rows) > views.PAGE else ""
        back = str(request.url.path) + ("?" + request.url.query if request.url.query else "")
        title = "Decision log" + ("" if show_all else ": waiting for review")
        return html(title, f"<p>Show {switch}.</p>" + pages.decision_table(rows[:views.PAGE], site.token, back,
                                                                             with_scope=True) + more, "decisions",
                    request)

    def sessions(request: Request) -> Response:
        return html("Sessions: captured and injected", pages.sessions(site.run(views.sessions)), "sessions",
                    request)

    def action(verb: str) -> Callable:
        async def act(request: Request) -> Response:
            form = await request.form()
            given = form.get("token")
            if not isinstance(given, str) or not secrets.compare_digest(given.encode(), site.token.encode()):
                return Response("the form's token is missing or wrong", 403)
            target = request.path_params["id"]
            try:
                said = {"done": site.run(lambda store: _apply(store, verb, target))}
            except SubcogError as e:
                said = {"error": str(e)}
            return RedirectResponse(_back(form.get("back"), said), 303)
        return act

    return Starlette(routes=[
        Route("/", home), Route("/project", project), Route("/memory/{id}", memory), Route("/search", search),
        Route("/decisions", decisions), Route("/sessions", sessions),
        Route("/decisions/{id}/confirm", action("confirm"), methods=["POST"]),
        Route("/decisions/{id}/reverse", action("reverse"), methods=["POST"]),
        Route("/memory/{id}/forget", action("forget"), methods=["POST"]),
    ], max_body_size=MAX_BODY)


def _back(value: object, said: dict[str, str]) -> str:
    """The page a form came from (a path of this server only), saying what was done instead of what it said."""
    parts = urlsplit(value if isinstance(value, str) else "/")
    path = parts.path if parts.path.startswith("/") and not parts.path.startswith("//") and not parts.netloc \
        and not parts.scheme else "/"
    query = [(k, v) for k, v in parse_qsl(parts.query) if k not in ("done", "error")] + list(said.items())
    return path + "?" + urlencode(query)


def _apply(store, verb: str, target: str) -> str:
    """One of the CLI's logged operations; returns what was done, in the CLI's words."""
    from subcog_store import review

    if verb == "confirm":
        row = review.confirm(store, target)
        return f"decision {row['id']} confirmed"
    if verb == "reverse":
        report = review.reverse(store, target)
        return f"decision {report.decision_id} {'reversed' if report.changed else 'not reversed'}: {report.message}"
    decision = store.forget(target, "forgotten from subcog-store ui")
    return f"forgot {target} (decision {decision}; reverse it from the decision log to bring it back)"


def serve(db: Path, port: int = 0, say: Callable[[str], None] = print) -> None:
    """Bind 127.0.0.1 (a free port unless `port`), print the URL with a fresh token, serve until interrupted."""
    import uvicorn

    token = secrets.token_urlsafe(24)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    port = sock.getsockname()[1]
    sock.listen(64)   # connections wait from now on, before uvicorn serves (the link is printed next)
    site = Site(db, token)
    app = Guard(build(site), token, port)
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off", server_header=False,
                            date_header=False)
    say(f"subcog-store ui: http://127.0.0.1:{port}/?token={token}\n(this address only, until Ctrl-C; the token "
        "changes with each start)")
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        site.close()
        sock.close()
