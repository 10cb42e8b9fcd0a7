"""The HTML of `subcog-store ui`: server-rendered pages, no script, every stored or typed text escaped (`esc`).

Forms: search (GET) and the decision log's confirm / reverse and a memory's forget (POST, with the token)."""
from __future__ import annotations

import html
from typing import Any, Iterable
from urllib.parse import urlencode

from subcog_store.db.memories import Memory

CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:0;color:#1d1d1f;background:#fafafa}
header{background:#233;color:#fff;padding:.6em 1.2em}header a{color:#cde;margin-right:1.2em;text-decoration:none}
header a.on{color:#fff;font-weight:600}main{padding:1em 1.6em;max-width:1400px}
table{border-collapse:collapse;width:100%;margin:.6em 0 1.4em}td,th{border-bottom:1px solid #ddd;padding:.3em .5em;
text-align:left;vertical-align:top}th{background:#eef;font-weight:600}.num{text-align:right;white-space:nowrap}
.text{white-space:pre-wrap;font:13px/1.4 ui-monospace,monospace;background:#fff;border:1px solid #ddd;padding:.6em}
.muted{color:#777}.flash{background:#e8f5e9;border:1px solid #9c9;padding:.5em .8em}.err{background:#fdecea;
border-color:#e99}.chip{display:inline-block;margin:0 .4em .4em 0;padding:.1em .6em;border:1px solid #ccd;
border-radius:1em;text-decoration:none;color:#224}.chip.on{background:#224;color:#fff}form.inline{display:inline}
button{cursor:pointer}input[type=search]{width:32em}.out{text-decoration:line-through;color:#888}
"""
LABELS = {"similarity": "cosine", "text_match": "word match", "vector_rank": "vector rank", "text_rank": "text rank",
          "coverage": "coverage (IDF)", "decayed_importance": "importance (aged)", "rrf": "rank fusion"}
NAV = (("projects", "/", "Projects"), ("search", "/search", "Search"), ("decisions", "/decisions", "Decision log"),
       ("sessions", "/sessions", "Sessions"))


def esc(value: object) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def link(path: str, text: object, **params: object) -> str:
    query = urlencode({k: v for k, v in params.items() if v not in (None, "")})
    return f'<a href="{esc(path + ("?" + query if query else ""))}">{esc(text)}</a>'


def cut(text: str | None, limit: int = 240) -> str:
    flat = " ".join((text or "").split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def page(title: str, body: str, active: str, done: str | None = None, error: str | None = None) -> str:
    nav = "".join(f'<a href="{href}"{" class=on" if key == active else ""}>{label}</a>' for key, href, label in NAV)
    note = (f'<p class="flash">{esc(done)}</p>' if done else "") + (f'<p class="flash err">{esc(error)}</p>'
                                                                    if error else "")
    return (f"<!doctype html><html lang=en><head><meta charset=utf-8><title>subcog · {esc(title)}</title>"
            f"<style>{CSS}</style></head><body><header><b>subcog-store</b> &nbsp; {nav}</header><main>"
            f"<h1>{esc(title)}</h1>{note}{body}</main></body></html>")


def table(head: Iterable[str], rows: Iterable[Iterable[str]], numeric: Iterable[int] = ()) -> str:
    nums = set(numeric)
    out = "".join(f"<th{' class=num' if i in nums else ''}>{h}</th>" for i, h in enumerate(head))
    body = "".join("<tr>" + "".join(f"<td{' class=num' if i in nums else ''}>{c}</td>" for i, c in enumerate(r))
                   + "</tr>" for r in rows)
    return f"<table><tr>{out}</tr>{body}</table>" if body else '<p class="muted">Nothing here.</p>'


def action(path: str, label: str, token: str, back: str) -> str:
    return (f'<form class=inline method=post action="{esc(path)}"><input type=hidden name=token value="{esc(token)}">'
            f'<input type=hidden name=back value="{esc(back)}"><button type=submit>{esc(label)}</button></form>')


def projects(rows: list[dict[str, Any]]) -> str:
    return table(["project (domain)", "current", "outdated", "retired", "last written"], (
        [link("/project", r["domain"], domain=r["domain"]), str(r["current"]), str(r["outdated"]),
         str(r["retired"]), esc(r["latest"])] for r in rows), numeric=(1, 2, 3))


def project(domain: str, spaces: list[dict[str, Any]], memories: list[Memory], namespace: str | None, state: str,
            offset: int, page_size: int) -> str:
    chips = "".join(f'<a class="chip{" on" if (ns["namespace"] == namespace) else ""}" href="/project?'
                    f'{esc(urlencode({"domain": domain, "namespace": ns["namespace"], "state": state}))}">'
                    f'{esc(ns["namespace"])} {ns["current"]}</a>' for ns in spaces)
    chips = (f'<a class="chip{" on" if not namespace else ""}" href="/project?'
             f'{esc(urlencode({"domain": domain, "state": state}))}">all</a>' + chips)
    states = " · ".join(f"<b>{s}</b>" if s == state else link("/project", s, domain=domain, namespace=namespace,
                                                                state=s) for s in ("current", "outdated", "retired",
                                                                                   "all"))
    rows = [[link("/memory/" + m.id, m.id), esc(m.namespace), esc(cut(m.content)),
             esc(m.status) + (" (outdated)" if m.status == "active" and m.successor_id else ""),
             f"{m.importance:.2f}", esc(m.created_at[:16])] for m in memories[:page_size]]
    more = link("/project", "next page", domain=domain, namespace=namespace, state=state,
                offset=offset + page_size) if len(memories) > page_size else ""
    search = (f'<form method=get action="/search"><input type=hidden name=domain value="{esc(domain)}">'
              f'<input type=search name=q placeholder="search this project as the hooks do"> '
              f"<button>search</button></form>")
    return (f"<p>{chips}</p><p>Show: {states}</p>{search}"
            + table(["id", "namespace", "memory", "status", "importance", "created"], rows, numeric=(4,)) + more)


def memory(detail: dict[str, Any], token: str) -> str:
    m, successor = detail["memory"], detail["successor"]
    facts = [("URN", esc(m.urn)), ("project", link("/project", m.domain, domain=m.domain)),
             ("namespace", esc(m.namespace)), ("status", esc(m.status)), ("importance", f"{m.importance:.2f}"),
             ("tags", esc(", ".join(m.tags))), ("source", esc(m.source)), ("session", esc(m.session_id)),
             ("created", esc(m.created_at)), ("updated", esc(m.updated_at))]
    if m.successor_id:
        label = "outdated by" if m.status == "active" else f"{m.status} into"
        facts.append((label, link("/memory/" + m.successor_id, m.successor_id) +
                      (f" — {esc(cut(successor.content, 160))}" if successor else "")))
    body = f'<div class="text">{esc(m.content)}</div>' + table(["", ""], ([k, v] for k, v in facts))
    if m.status == "active":
        body += action(f"/memory/{m.id}/forget", "forget this memory (logged; reversible)", token, f"/memory/{m.id}")
    if detail["predecessors"]:
        body += "<h2>What it replaced</h2>" + table(["memory", "status", "text", "created"], (
            [link("/memory/" + p["id"], p["id"]), esc(p["status"]), f'<span class=out>{esc(cut(p["content"]))}</span>',
             esc(p["created_at"][:16])] for p in detail["predecessors"]))
    body += "<h2>History</h2>" + decision_table(detail["decisions"], token, f"/memory/{m.id}")
    return body


def decision_table(rows: list[dict[str, Any]], token: str, back: str, with_scope: bool = False) -> str:
    out = []
    for r in rows:
        acts = ""
        if r["review_status"] != "reversed":
            acts = action(f"/decisions/{r['id']}/reverse", "reverse", token, back)
            if r["review_status"] == "unreviewed":
                acts = action(f"/decisions/{r['id']}/confirm", "confirm", token, back) + " " + acts
        memories = " ".join(link("/memory/" + x, x) for x in (r.get("memory_id"), r.get("matched_memory_id")) if x)
        scope = [esc(f"{r.get('domain')} / {r.get('namespace')}")] if with_scope else []
        out.append([f'<a id="d{r["id"]}">#{r["id"]}</a>', esc(r["decided_at"][:19]), *scope, esc(r["decision"]),
                    esc(r["review_status"]), "" if r["similarity"] is None else f"{r['similarity']:.3f}",
                    esc(cut(r["new_content"], 160)), esc(cut(r["matched_content"], 160)), esc(cut(r["reasoning"], 200)),
                    memories, acts])
    head = ["#", "when", *(["project / namespace"] if with_scope else []), "decision", "review", "similarity",
            "new text", "matched text", "why", "memories", ""]
    return table(head, out, numeric=(5 if with_scope else 4,))


def search_form(query: str, domain: str, namespace: str, projects: list[str], spaces: list[str]) -> str:
    def options(values: list[str], chosen: str, blank: str = "") -> str:
        opts = [f'<option value=""{" selected" if not chosen else ""}>{esc(blank)}</option>'] if blank else []
        return "".join(opts + [f'<option value="{esc(v)}"{" selected" if v == chosen else ""}>{esc(v)}</option>'
                               for v in values])
    return (f'<form method=get action="/search"><input type=search name=q value="{esc(query)}" autofocus '
            f'placeholder="a prompt, a question"> <select name=domain>{options(projects, domain)}</select> '
            f'<select name=namespace>{options(spaces, namespace, "every namespace")}</select> '
            f"<button type=submit>search</button></form>")


def search_results(result: dict[str, Any], formula: str) -> str:
    found = result["found"]
    injected = result["injected"]
    head = (f'<p>{len(found.hits)} memories ({esc(found.method)}{"; " + esc(found.note) if found.note else ""}; '
            f"{found.duration_ms:.0f} ms). The prompt hook injects those that clear its gate ({esc(result['gate'])}), "
            f"{esc(result['limits'])}: "
            + (f"<b>{len(injected)}</b> here" if injected else f"none here ({esc(result['injected_reason'])})"
               if injected is not None else "(one namespace searched: the hook searches them all)") + ".</p>"
            + (f'<p class="muted">{esc(formula)}</p>' if formula else ""))
    keys = [k for k in (result["hits"][0]["components"] if result["hits"] else {}) if k != "outdated_by"]
    rows = []
    for rank, h in enumerate(result["hits"], start=1):
        c = h["components"]
        rows.append([str(rank), link("/memory/" + h["id"], h["id"]), esc(h["namespace"]),
                     esc(cut(h["content"], 200)) + (" <b>OUTDATED</b>" if c.get("outdated_by") else ""),
                     f"{h['score']:.4f}", *(_num(c.get(k)) for k in keys),
                     "yes" if injected and h["id"] in injected else "–"])
    return head + table(["#", "memory", "namespace", "text", "score", *(esc(LABELS.get(k, k)) for k in keys),
                         "prompt hook injects"], rows, numeric=range(4, 5 + len(keys)))


def _num(value: object) -> str:
    return "" if value is None else f"{value:.3f}" if isinstance(value, float) else esc(value)


def sessions(rows: list[dict[str, Any]]) -> str:
    total = [sum(r[k] for r in rows) for k in ("captured", "captured_tokens", "recalls", "injected",
                                               "injected_tokens")]
    body = [[esc(r["session_id"]), link("/project", r["domain"], domain=r["domain"]) if r["domain"] else "",
             str(r["captured"]), str(r["captured_tokens"]), str(r["recalls"]), str(r["injected"]),
             str(r["injected_tokens"]), esc((r["last_at"] or "")[:16])] for r in rows]
    body.append(["<b>all</b>", "", *[f"<b>{t}</b>" for t in total], ""])
    return ("<p>What the hooks captured from each session (memories stored with its id; tokens at 4 characters "
            "each) and what they injected into it (recalls, memories, tokens).</p>"
            + table(["session", "project", "captured", "captured tokens", "recalls", "injected",
                     "injected tokens", "last"], body, numeric=(2, 3, 4, 5, 6)))
