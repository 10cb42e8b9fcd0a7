"""Recall commands: search, the project's domain, moving memories between domains, forget."""
# Lazy imports: each command imports what it runs (every command is registered at start-up).
from __future__ import annotations

import argparse
import os

from subcog_store.cli.app import emit, open_store, positive_int


def register(sub, add) -> None:
    p = add("search", "search a project's memories (hybrid: vectors and BM25, current facts first)", cmd_search)
    p.add_argument("query", help="what to look for ('-' reads stdin)")
    p.add_argument("--namespace", "-n", help="only this namespace")
    p.add_argument("--domain", "-d", help="the project's domain (default: the one of the current directory)")
    p.add_argument("--limit", "-k", type=positive_int, default=5, help="results (default 5, at most 1000)")
    p.add_argument("--all", action="store_true", help="also superseded, merged and deleted memories")
    p.add_argument("--explain", action="store_true", help="each component of every score")
    p.add_argument("--no-model", action="store_true", help="the text side alone (BM25), no model loaded")
    p.add_argument("--sessions", action="store_true", help="also the sessions' own text, ranked below the "
                                                            "memories, and the developer's preferences")
    p = add("domain", "print the domain a hook would use for a directory (its git top-level)", cmd_domain)
    p.add_argument("--cwd", default=None, help="the directory (default: the current one)")
    p = add("move-domain", "move every memory of one domain to another (e.g. from the shared `project` of "
                           "stores written before per-project domains)", cmd_move_domain)
    p.add_argument("source", help="the domain to empty, e.g. project")
    p.add_argument("target", nargs="?", help="the domain to fill (default: the current directory's)")
    p = add("forget", "retire a memory, or everything one session or source produced (out of search; logged; "
                      "`reverse` brings it back)", cmd_forget)
    p.add_argument("id", nargs="?", help="a memory id or subcog:// URN")
    p.add_argument("--session", help="every active memory this session produced (its id)")
    p.add_argument("--source", help="every active memory of this source (e.g. mcp, pre-compact-hook, cli)")
    p.add_argument("--domain", "-d", help="with --session/--source: the project's domain (default: the current "
                                          "directory's)")
    p.add_argument("--dry-run", action="store_true", help="with --session/--source: list, change nothing")
    p.add_argument("--reason", help="why (kept in the decision log)")


def _current_domain(cwd: str | None = None) -> str:
    from subcog_store.scope import domain_for

    return domain_for(cwd or os.getcwd())


def cmd_search(args: argparse.Namespace) -> int:
    from subcog_store.cli.app import read_text_arg

    domain = args.domain or _current_domain()
    if args.sessions:
        return _search_sessions(args, domain, read_text_arg(args.query))
    with open_store(args) as store:
        found = store.search(read_text_arg(args.query), domain=domain, namespace=args.namespace, limit=args.limit,
                             include_all=args.all, use_model=not args.no_model)
        hits = [h.to_dict(explain=args.explain) for h in found.hits]
        data = {"domain": domain, "method": found.method, "note": found.note,
                "duration_ms": round(found.duration_ms, 3), "results": hits}
        lines = [f"{len(hits)} result(s) in {domain} ({found.method}" + (f"; {found.note}" if found.note else "")
                 + ")"]
        for h in hits:
            status = "" if h["status"] == "active" and "successor_id" not in h else \
                f" [{h['status']}{', updated by ' + h['successor_id'] if h.get('successor_id') else ''}]"
            lines.append(f"{h['score']:.4f}  {h['urn']}{status}\n    {h['content'][:200]}")
            if args.explain:
                lines.append("    " + ", ".join(f"{k}={v}" for k, v in h["components"].items()))
        emit(args, data, "\n".join(lines))
    return 0


def _search_sessions(args: argparse.Namespace, domain: str, query: str) -> int:
    """`search --sessions`: memories (the project's and the developer's preferences), then the sessions' text."""
    from subcog_store.recall.session_search import search_all

    with open_store(args) as store:
        found = search_all(store, query, domain=domain, limit=args.limit, use_model=not args.no_model,
                           namespace=args.namespace)
    results = [{"kind": f.kind, "ref": f.ref, "similarity": None if f.similarity is None else round(f.similarity, 4),
                "content": f.text} for f in found.items]
    lines = [f"{len(results)} result(s) in {domain} ({found.method}" + (f"; {found.note}" if found.note else "") + ")"]
    lines += [f"{r['ref']}{' [earlier session]' if r['kind'] == 'session' else ''}\n    {r['content'][:200]}"
              for r in results]
    emit(args, {"domain": domain, "method": found.method, "note": found.note, "results": results}, "\n".join(lines))
    return 0


def cmd_domain(args: argparse.Namespace) -> int:
    domain = _current_domain(args.cwd)
    emit(args, {"domain": domain, "cwd": os.path.abspath(args.cwd or os.getcwd())}, domain)
    return 0


def cmd_move_domain(args: argparse.Namespace) -> int:
    target = args.target or _current_domain()
    from subcog_store.progress import bar

    with open_store(args) as store, bar(0, "move-domain", unit="memories", quiet=args.quiet) as p:
        result = store.move_domain(args.source, target, progress=p.update)
    emit(args, result, f"moved {result['moved']} memories from {result['source']} to {result['target']}"
                       + (f" ({result['merged']} merged into the same text already there)" if result["merged"] else ""))
    return 0


def cmd_forget(args: argparse.Namespace) -> int:
    from subcog_store.errors import InvalidInput

    if args.session or args.source:
        if args.id:
            raise InvalidInput("give a memory id, or --session/--source, not both")
        return _forget_produced(args)
    if not args.id:
        raise InvalidInput("give a memory id or URN, or --session ID or --source S")
    with open_store(args) as store:
        memory = store.get(args.id.rsplit("/", 1)[-1])
        decision = store.forget(memory.id, args.reason)
    emit(args, {"id": memory.id, "urn": memory.urn, "decision_id": decision},
         f"forgot {memory.urn} (decision {decision}; `subcog-store reverse {decision}` brings it back)")
    return 0


def _forget_produced(args: argparse.Namespace) -> int:
    from subcog_store.maintenance import forget_produced

    domain = args.domain or _current_domain()
    with open_store(args) as store:
        result = forget_produced(store, domain, session_id=args.session, source=args.source, reason=args.reason,
                                 dry_run=args.dry_run)
    n, again = len(result["forgotten"]), len(result["current_again"])
    if args.dry_run:
        text = f"would forget {n} memories of {result['what']} in {domain}" + (
            f"; {again} facts they updated would be current again" if again else "")
    elif not n:
        text = f"no active memory of {result['what']} in {domain}; nothing changed"
    else:
        text = (f"forgot {n} memories of {result['what']} in {domain} (decision {result['decision_id']}; "
                f"`subcog-store reverse {result['decision_id']}` brings them all back)"
                + (f"; {again} facts they had updated are current again" if again else ""))
    emit(args, result, text)
    return 0
