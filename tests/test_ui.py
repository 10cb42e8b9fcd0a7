"""`subcog-store ui` over plain HTTP: what it refuses (no token, another origin or host, a large body), what it
escapes, that it listens on loopback only, and that its actions are the CLI's logged operations. (The page in a
real browser: `make ui-test`.)"""
from __future__ import annotations

import http.client
import socket
import subprocess
from urllib.parse import urlencode

import pytest

from subcog_store.store import Store
from helpers import clean_environ, cli_command

TTL5 = "We decided to use Redis for the session cache with a TTL of 5 minutes, because sessions are read often."
TTL10 = TTL5.replace("5 minutes", "10 minutes")
SCRIPT = 'A memory holding <script>alert("x")</script> & <img src=x onerror=alert(1)> must read as text.'


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ui")
    db = tmp / "m.db"
    env = clean_environ({"SUBCOG_DB": str(db), "SUBCOG_WORKER_ENABLED": "false",
                         "SUBCOG_DEDUP_SEMANTIC_ENABLED": "false"}, answer_when_done=False)
    with Store(db, environ={"SUBCOG_DEDUP_SEMANTIC_ENABLED": "false"}) as store:
        store.capture(TTL5, "decisions", "shop", session_id="s-1")
        store.capture(TTL10, "decisions", "shop", session_id="s-1")
        store.capture(SCRIPT, "learnings", "shop")
    proc = subprocess.Popen([*cli_command(), "ui"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    link = proc.stdout.readline().split()[-1]
    port, token = int(link.split(":")[2].split("/")[0]), link.split("token=")[1]
    yield {"port": port, "token": token, "db": db, "proc": proc}
    proc.terminate()
    assert proc.wait(30) is not None
    assert "Traceback" not in proc.stderr.read()


def ask(server, method: str, path: str, *, headers: dict | None = None, body: bytes | None = None,
        cookie: bool = True, host: str | None = None) -> http.client.HTTPResponse:
    con = http.client.HTTPConnection("127.0.0.1", server["port"], timeout=60)
    h = {"Host": host or f"127.0.0.1:{server['port']}", **(headers or {})}
    if cookie:
        h["Cookie"] = f"subcog_ui_{server['port']}={server['token']}"
    con.request(method, path, body=body, headers=h)
    answer = con.getresponse()
    answer.text = answer.read().decode()   # type: ignore[attr-defined]
    con.close()
    return answer


def post(server, path: str, fields: dict, origin: str | None = "self", **kw) -> http.client.HTTPResponse:
    headers = {"Content-Type": "application/x-www-form-urlencoded"}
    if origin:
        headers["Origin"] = f"http://127.0.0.1:{server['port']}" if origin == "self" else origin
    return ask(server, "POST", path, headers=headers, body=urlencode(fields).encode(), **kw)


def test_the_token_is_required_and_moves_to_a_cookie(server) -> None:
    assert ask(server, "GET", "/", cookie=False).status == 403
    assert ask(server, "GET", "/?token=wrong", cookie=False).status == 403
    first = ask(server, "GET", f"/decisions?token={server['token']}&show=all", cookie=False)
    assert first.status == 303 and first.getheader("Location") == "/decisions?show=all"
    cookie = first.getheader("Set-Cookie")
    assert cookie.startswith(f"subcog_ui_{server['port']}={server['token']}") and "HttpOnly" in cookie \
        and "SameSite=Strict" in cookie
    page = ask(server, "GET", "/")
    assert page.status == 200 and "shop" in page.text
    csp = page.getheader("Content-Security-Policy")
    assert "default-src 'none'" in csp and "script-src" not in csp and "frame-ancestors 'none'" in csp


def test_another_host_or_origin_is_refused(server) -> None:
    assert ask(server, "GET", "/", host="evil.example:80").status == 403            # DNS rebinding
    assert ask(server, "GET", "/", host=f"localhost:{server['port']}").status == 200
    assert ask(server, "GET", "/", headers={"Origin": "http://evil.example"}).status == 403
    assert ask(server, "GET", "/", headers={"Sec-Fetch-Site": "cross-site"}).status == 403
    assert post(server, "/decisions/1/confirm", {"token": server["token"]}, origin="http://evil.example").status \
        == 403
    assert post(server, "/decisions/1/confirm", {"token": server["token"]}, origin=None).status == 403
    assert post(server, "/decisions/1/confirm", {"token": "wrong"}).status == 403
    assert ask(server, "PUT", "/").status == 405


def test_a_large_body_is_refused(server) -> None:
    big = post(server, "/decisions/1/confirm", {"token": server["token"], "pad": "x" * (64 << 10)})
    assert big.status == 413
    con = http.client.HTTPConnection("127.0.0.1", server["port"], timeout=60)   # no length declared: counted
    con.putrequest("POST", "/decisions/1/confirm", skip_host=True, skip_accept_encoding=True)
    for name, value in (("Host", f"127.0.0.1:{server['port']}"), ("Origin", f"http://127.0.0.1:{server['port']}"),
                        ("Cookie", f"subcog_ui_{server['port']}={server['token']}"),
                        ("Content-Type", "application/x-www-form-urlencoded"), ("Transfer-Encoding", "chunked")):
        con.putheader(name, value)
    con.endheaders()
    for _ in range(40):
        con.send(b"%x\r\n%s\r\n" % (1024, b"a" * 1024))
    con.send(b"0\r\n\r\n")
    assert con.getresponse().status == 413
    con.close()


def test_every_stored_text_is_escaped(server) -> None:
    with Store(server["db"], environ={}) as store:
        memory = next(m for m in store.memories("learnings", "shop"))
    for path in (f"/memory/{memory.id}", "/project?domain=shop&namespace=learnings&state=all",
                 "/search?" + urlencode({"q": "memory holding script", "domain": "shop"}), "/decisions?show=all"):
        page = ask(server, "GET", path)
        assert page.status == 200, path
        assert "<script>" not in page.text and "<img" not in page.text, path
        assert "&lt;script&gt;" in page.text, path
    reflected = ask(server, "GET", "/search?" + urlencode({"q": "<script>x</script>", "domain": "<b>"}))
    assert "<script>x" not in reflected.text and "&lt;script&gt;x" in reflected.text
    assert "<b>" not in reflected.text.replace("<b>subcog-store</b>", "").replace("<b>1</b>", "")


def test_it_listens_on_loopback_only(server) -> None:
    with socket.create_connection(("127.0.0.1", server["port"]), timeout=10):
        pass
    others = {"127.0.0.2"}
    try:
        others |= {a[4][0] for a in socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET)}
    except OSError:
        pass
    for address in others - {"127.0.0.1"}:
        with pytest.raises(OSError):
            socket.create_connection((address, server["port"]), timeout=5).close()


def test_the_actions_are_the_clis_logged_operations(server) -> None:
    with Store(server["db"], environ={}) as store:
        changed = store.con.execute("select id from dedup_log where decision = 'changed_fact'").fetchone()[0]
        old, new = (m.id for m in sorted(store.memories("decisions", "shop"), key=lambda m: m.created_at))
    done = post(server, f"/decisions/{changed}/reverse", {"token": server["token"], "back": "/decisions?x=1"})
    assert done.status == 303 and done.getheader("Location").startswith("/decisions?x=1&done=decision+")
    log = ask(server, "GET", "/decisions?show=all")
    assert f'id="d{changed}"' in log.text and "reversed" in log.text
    forgot = post(server, f"/memory/{old}/forget", {"token": server["token"], "back": "https://evil.example/"})
    assert forgot.status == 303 and forgot.getheader("Location").startswith("/?done=forgot+")
    with Store(server["db"], environ={}) as store:
        assert store.con.execute("select review_status from dedup_log where id = ?", (changed,)).fetchone()[0] == \
            "reversed"
        assert store.get(new).status == "deleted" and store.get(old).status == "deleted"
        forgotten = store.con.execute("select id from dedup_log where decision = 'forgotten'").fetchone()[0]
    again = post(server, f"/decisions/{forgotten}/confirm", {"token": server["token"]})
    assert again.status == 303 and "confirmed" in again.getheader("Location")
    bad = post(server, "/decisions/999999/reverse", {"token": server["token"]})
    assert bad.status == 303 and "error=" in bad.getheader("Location")
    history = ask(server, "GET", f"/memory/{old}")
    assert "forgotten" in history.text and "changed_fact" in history.text


def test_the_dashboard_counts_sessions(server) -> None:
    page = ask(server, "GET", "/sessions")
    assert page.status == 200 and "s-1" in page.text
