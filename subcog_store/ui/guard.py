"""What every request to `subcog-store ui` must pass before any page runs (plain ASGI, outermost).

- The Host header names this server on loopback (127.0.0.1:PORT or localhost:PORT): a page of another site that
  rebinds its own name to 127.0.0.1 (DNS rebinding) is refused.
- No other origin: an `Origin` header, when sent, is this server's; `Sec-Fetch-Site`, when sent, is `same-origin`
  or `none` (typed or opened from the printed link); a POST must carry its origin.
- The token: the random one in the printed URL (`?token=`), kept in a cookie of this port only (HttpOnly,
  SameSite=Strict) after the first visit, which is redirected to the same page without it; a POST must also
  carry it as the form field `token`. Compared in constant time.
- A body of at most MAX_BODY bytes (its declared length is checked here; Starlette's limit counts the rest).
Every answer carries a strict Content-Security-Policy (no script at all, forms to this server only), a referrer
for this origin only (with none, Chromium sends a form's origin as `null`), no caching, no framing.
"""
from __future__ import annotations

import hmac
from typing import Any, Awaitable, Callable
from urllib.parse import parse_qsl, urlencode

MAX_BODY = 16 << 10
HEADERS = [
    (b"content-security-policy", b"default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; "
                                 b"form-action 'self'; frame-ancestors 'none'; base-uri 'none'"),
    (b"x-content-type-options", b"nosniff"), (b"referrer-policy", b"same-origin"),
    (b"x-frame-options", b"DENY"), (b"cache-control", b"no-store"),
]

Scope = dict[str, Any]
ASGI = Callable[[Scope, Callable, Callable], Awaitable[None]]


def cookie_name(port: int) -> str:
    return f"subcog_ui_{port}"


class Guard:
    """The ASGI wrapper of the app: refuses what does not pass (403, 413) and adds the security headers."""

    def __init__(self, app: ASGI, token: str, port: int):
        self.app, self.token, self.port = app, token, port
        self.hosts = {f"127.0.0.1:{port}".encode(), f"localhost:{port}".encode()}
        self.origins = {b"http://" + h for h in self.hosts}

    async def __call__(self, scope: Scope, receive: Callable, send: Callable) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {}
        for name, value in scope.get("headers", []):
            headers.setdefault(name.lower(), value)
        problem, status = self.refusal(scope, headers)
        if problem:
            await _answer(send, status, problem)
            return
        query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
        if "token" in query and scope["method"] == "GET":   # the printed link: keep the token in a cookie
            rest = urlencode({k: v for k, v in query.items() if k != "token"})
            location = scope.get("path", "/") + (f"?{rest}" if rest else "")
            await _answer(send, 303, "", [(b"location", location.encode()), (b"set-cookie", (
                f"{cookie_name(self.port)}={self.token}; Path=/; HttpOnly; SameSite=Strict").encode())])
            return

        async def with_headers(message: dict) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *HEADERS]
            await send(message)
        await self.app(scope, receive, with_headers)

    def refusal(self, scope: Scope, headers: dict[bytes, bytes]) -> tuple[str, int]:
        """Why the request is refused ('' when it is not) and the status."""
        if headers.get(b"host", b"").lower() not in self.hosts:
            return "this page answers only at the address subcog-store ui printed", 403
        origin = headers.get(b"origin")
        if origin is not None and origin.lower() not in self.origins:
            return "requests from another origin are refused", 403
        if headers.get(b"sec-fetch-site", b"same-origin") not in (b"same-origin", b"none"):
            return "requests from another site are refused", 403
        if scope["method"] not in ("GET", "HEAD", "POST"):
            return "method not allowed", 405
        if scope["method"] == "POST" and origin is None:
            return "a form must come from this page (no Origin header)", 403
        length = headers.get(b"content-length", b"0")
        if not length.isdigit() or int(length) > MAX_BODY:
            return f"request body over {MAX_BODY} bytes", 413
        if not self.has_token(scope, headers):
            return ("this page needs the link `subcog-store ui` printed (with its token); run it again for a "
                    "new one"), 403
        return "", 200

    def has_token(self, scope: Scope, headers: dict[bytes, bytes]) -> bool:
        query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
        cookies = dict(part.strip().split("=", 1) for part in headers.get(b"cookie", b"").decode("latin-1")
                       .split(";") if "=" in part)
        given = query.get("token") or cookies.get(cookie_name(self.port), "")
        return hmac.compare_digest(given.encode(), self.token.encode())

    def form_token_ok(self, value: object) -> bool:
        return isinstance(value, str) and hmac.compare_digest(value.encode(), self.token.encode())


async def _answer(send: Callable, status: int, text: str, extra: list[tuple[bytes, bytes]] | None = None) -> None:
    body = text.encode()
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode()),
        *HEADERS, *(extra or [])]})
    await send({"type": "http.response.body", "body": body})
