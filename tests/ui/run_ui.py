#!/usr/bin/env python3
"""`make ui-test`: `subcog-store ui` in a real headless Chromium (Debian's `chromium` and `chromium-driver`).

    .venv/bin/python tests/ui/run_ui.py [--keep] [--artefacts DIR]

A store is filled through the CLI (a decision, its changed fact, a memory holding `<script>`), `subcog-store ui`
started on a free loopback port, and Chromium driven through chromedriver's W3C WebDriver protocol (plain HTTP, no
client library): the page loads with the token link, every project is listed, a search finds the memory the prompt
hook would inject and explains its score, the `<script>` memory reads as text and runs nothing, and a reverse
clicked in the decision log is shown there as reversed and is reversed in the database. One PASS/FAIL line per
check; screenshots of each page are kept in the artefacts folder (default tests/ui/artefacts/). Exit 0 all
passed, 1 a failure, 77 skipped (Chromium or chromedriver not installed: a SKIP line says so).
"""
from __future__ import annotations

import argparse
import base64
import json
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
CHECKOUT = HERE.parents[1]
SUBCOG = CHECKOUT / ".venv" / "bin" / "subcog-store"
SKIP = 77
ELEMENT = "element-6066-11e4-a52e-4f735466cecf"
CHROME_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
               "--disable-component-update", "--disable-sync", "--window-size=1400,1000"]
TTL5 = ("We decided to use Redis for the session cache with a TTL of 5 minutes, because sessions are read on every "
        "request and Postgres was the bottleneck.")
TTL10 = TTL5.replace("5 minutes", "10 minutes")
POOL = "We chose PgBouncer in transaction mode for Postgres connection pooling because the app opens many sessions."
SCRIPT = "The admin page once showed <script>alert('subcog')</script> from an unescaped template."


class WebDriver:
    """The few W3C WebDriver commands the checks need, over plain HTTP."""

    def __init__(self, port: int):
        self.base = f"http://127.0.0.1:{port}"
        self.session = ""

    def call(self, method: str, path: str, body: dict | None = None) -> object:
        data = json.dumps(body).encode() if body is not None else (b"{}" if method == "POST" else None)
        request = urllib.request.Request(self.base + path, data=data, method=method,
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=120) as answer:
                return json.loads(answer.read())["value"]
        except urllib.error.HTTPError as e:
            value = json.loads(e.read() or b"{}").get("value", {})
            raise RuntimeError(f"{method} {path}: {value.get('error')}: {str(value.get('message'))[:300]}") from None

    def start(self, chromium: str, profile: Path) -> None:
        caps = {"capabilities": {"alwaysMatch": {"browserName": "chrome", "goog:chromeOptions": {
            "binary": chromium, "args": [*CHROME_ARGS, f"--user-data-dir={profile}"]}}}}
        self.session = self.call("POST", "/session", caps)["sessionId"]

    def go(self, url: str) -> None:
        self.call("POST", f"/session/{self.session}/url", {"url": url})

    def find(self, css: str) -> str:
        return self.call("POST", f"/session/{self.session}/element", {"using": "css selector", "value": css})[ELEMENT]

    def find_all(self, css: str) -> list[str]:
        found = self.call("POST", f"/session/{self.session}/elements", {"using": "css selector", "value": css})
        return [e[ELEMENT] for e in found]

    def text(self, element: str | None = None) -> str:
        element = element or self.find("body")
        return self.call("GET", f"/session/{self.session}/element/{element}/text")

    def read(self, css: str) -> str | None:
        """The text of the first element matching `css`, or None while the page has none (or is being replaced:
        an element found on the old page and read after the new one arrived is stale)."""
        try:
            return self.text(self.find(css))
        except RuntimeError as e:
            if "stale element" in str(e) or "no such element" in str(e):
                return None
            raise

    def click(self, element: str) -> None:
        self.call("POST", f"/session/{self.session}/element/{element}/click")

    def type(self, element: str, text: str) -> None:
        self.call("POST", f"/session/{self.session}/element/{element}/value", {"text": text})

    def title(self) -> str:
        return self.call("GET", f"/session/{self.session}/title")

    def url(self) -> str:
        return self.call("GET", f"/session/{self.session}/url")

    def alert(self) -> str | None:
        try:
            return self.call("GET", f"/session/{self.session}/alert/text")
        except RuntimeError:
            return None

    def screenshot(self, path: Path) -> None:
        path.write_bytes(base64.b64decode(self.call("GET", f"/session/{self.session}/screenshot")))

    def quit(self) -> None:
        if self.session:
            try:
                self.call("DELETE", f"/session/{self.session}")
            except (RuntimeError, OSError):
                pass


class Results:
    def __init__(self) -> None:
        self.rows: list[tuple[str, bool]] = []

    def check(self, name: str, ok: bool, evidence: str = "") -> bool:
        self.rows.append((name, bool(ok)))
        print(f"{'PASS' if ok else 'FAIL'} {name}")
        for line in str(evidence).strip().splitlines()[:8]:
            print(f"     {line[:300]}")
        sys.stdout.flush()
        return bool(ok)


def browser() -> tuple[str | None, str | None]:
    """Chromium and its driver, by the names Debian (and Ubuntu) install them under."""
    return (shutil.which("chromium") or shutil.which("chromium-browser"),
            shutil.which("chromedriver") or shutil.which("chromium.chromedriver"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(predicate, timeout: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return bool(predicate())


def fill_store(env: dict[str, str]) -> None:
    for namespace, text in (("decisions", TTL5), ("decisions", TTL10), ("decisions", POOL), ("learnings", SCRIPT)):
        subprocess.run([str(SUBCOG), "capture", "-n", namespace, "-d", "shop", text], env=env, check=True,
                       capture_output=True, timeout=300)
    subprocess.run([str(SUBCOG), "capture", "-n", "decisions", "-d", "billing", POOL], env=env, check=True,
                   capture_output=True, timeout=300)


def run(work: Path, artefacts: Path, r: Results) -> None:
    chromium, driver_bin = browser()
    env = {k: v for k, v in os.environ.items() if not k.startswith("SUBCOG_")}
    env.update(SUBCOG_DB=str(work / "memories.db"), SUBCOG_WORKER_ENABLED="false", HOME=str(work / "home"),
               XDG_RUNTIME_DIR=str(work / "run"))
    (work / "run").mkdir(mode=0o700)
    fill_store(env)
    ui = subprocess.Popen([str(SUBCOG), "ui"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    port = free_port()
    driver = subprocess.Popen([driver_bin, f"--port={port}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    web = WebDriver(port)
    try:
        link = ui.stdout.readline().split()[-1]
        r.check("subcog-store ui prints a loopback link with a token", link.startswith("http://127.0.0.1:")
                and "?token=" in link, link.split("?")[0] + "?token=…")
        base = link.split("?")[0].rstrip("/")
        wait_for(lambda: _listening(port), 30)
        web.start(chromium, work / "chromium-profile")

        web.go(link)
        page = web.text()
        r.check("the page loads from the printed link (projects listed, the token moved to a cookie)",
                web.title() == "subcog · Projects" and "shop" in page and "billing" in page
                and "token=" not in web.url(), f"title {web.title()!r}, url {web.url()}")
        web.screenshot(artefacts / "1-projects.png")

        web.go(f"{base}/search?domain=shop")
        box = web.find("input[name=q]")
        web.type(box, "How long do we keep sessions in the Redis cache?")
        web.click(web.find("form button[type=submit]"))
        wait_for(lambda: "prompt hook injects" in (web.read("body") or ""), 120)
        page = web.read("body") or ""
        rows = [web.text(row) for row in web.find_all("table tr")]
        first = rows[1] if len(rows) > 1 else ""
        r.check("search finds the current fact first and says whether the prompt hook injects it, with the score's "
                "components", "10 minutes" in first and first.rstrip().endswith("yes") and "OUTDATED" in page
                and "score =" in page and "cosine" in page, first[:240])
        web.screenshot(artefacts / "2-search.png")

        web.go(f"{base}/project?domain=shop&namespace=learnings")
        web.click(web.find("table a[href^='/memory/']"))
        wait_for(lambda: web.read(".text") is not None, 60)
        shown = web.read(".text") or ""
        r.check("a memory holding <script> reads as text and runs nothing", shown == SCRIPT and web.alert() is None,
                f"shown: {shown[:120]!r}; alert: {web.alert()!r}")

        web.go(f"{base}/decisions")
        changed = next((row for row in web.find_all("table tr") if "changed_fact" in web.text(row)), None)
        decision_id = web.text(changed).split()[0].lstrip("#") if changed else "?"
        if changed:
            button = next(b for b in web.find_all("table tr button") if web.text(b) == "reverse"
                          and b in _buttons(web, changed))
            web.click(button)
        wait_for(lambda: web.read(".flash") is not None, 60)
        said = web.read(".flash") or ""
        web.go(f"{base}/decisions?show=all")
        logged = next((web.text(row) for row in web.find_all("table tr") if web.text(row).startswith(
            f"#{decision_id} ")), "")
        db = _review_status(work / "memories.db", decision_id)
        r.check("a reverse clicked in the decision log shows there as reversed (and is reversed in the store)",
                "revers" in said and " reversed " in f" {logged} " and db == "reversed",
                f"after the click: {said[:200]!r}\nthe log: {logged[:200]!r}\ndedup_log: {db}")
        web.screenshot(artefacts / "3-decisions.png")
        web.go(f"{base}/sessions")
        web.screenshot(artefacts / "4-sessions.png")
    finally:
        web.quit()
        for proc in (driver, ui):
            proc.terminate()
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)


def _buttons(web: WebDriver, row: str) -> list[str]:
    found = web.call("POST", f"/session/{web.session}/element/{row}/elements",
                     {"using": "css selector", "value": "button"})
    return [e[ELEMENT] for e in found]


def _listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


def _review_status(db: Path, decision_id: str) -> str | None:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        row = con.execute("select review_status from dedup_log where id = ?", (decision_id,)).fetchone()
        return row[0] if row else None
    finally:
        con.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="subcog-store ui in headless Chromium")
    ap.add_argument("--keep", action="store_true", help="keep the work directory (store, profile)")
    ap.add_argument("--artefacts", type=Path, default=HERE / "artefacts", help="where the screenshots go")
    args = ap.parse_args(argv)
    missing = [name for name, found in zip(("chromium", "chromedriver"), browser()) if not found]
    if missing:
        print(f"SKIP ui-test: {' and '.join(missing)} not installed (apt-get install -y chromium chromium-driver). "
              "Skipped: the page in a real browser (load, search, escaping, reverse from the decision log).")
        return SKIP
    if not SUBCOG.exists():
        print(f"SETUP ERROR: {SUBCOG} is missing: run `make setup` first")
        return 2
    args.artefacts.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="subcog-ui-"))
    r = Results()
    started = time.time()
    try:
        run(work, args.artefacts, r)
    except Exception as e:  # noqa: BLE001 - a harness error is a failure, with its reason
        r.check("the run went to the end", False, f"{type(e).__name__}: {e}")
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    failed = [name for name, ok in r.rows if not ok]
    print(f"\nui-test: {time.time() - started:.0f} s; screenshots in {args.artefacts}")
    for name in failed:
        print(f"  FAILED: {name}")
    print(f"{len(r.rows) - len(failed)} passed, {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
