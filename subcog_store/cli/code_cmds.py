"""Commands on what memories cite in their project's code: cite, verify (and its review actions)."""
# Lazy imports: a command loads the store and the code modules only when it runs (the parser is built for all).
from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from subcog_store.cli.app import emit, open_store, positive_int
from subcog_store.errors import InvalidInput

REVIEW_HELP = ("review each: `subcog-store verify --still-true URN` (it still holds), `subcog-store forget URN`, or "
               "`subcog-store verify --new-fact URN TEXT` (records the new fact; the old memory is superseded)")
COMMAND_SECS = 600.0


def register(sub, add) -> None:
    p = add("cite", "give a project's memories their citations (files, symbols, values they name in its code); "
                    "memories stored before, or by commands, get theirs here", cmd_cite)
    _project_args(p)
    p.add_argument("--all", action="store_true", help="cite every active memory again, not only uncited ones")
    p.add_argument("--limit", type=positive_int, default=1_000_000)
    p = add("verify", "check a project's memories against the code they cite and list those it no longer bears "
                      "out (possibly outdated), for review", cmd_verify)
    _project_args(p)
    p.add_argument("--all", action="store_true", help="read every cited file, not only those changed since their "
                                                      "last check")
    p.add_argument("--list", action="store_true", help="only list the marked memories (no check)")
    p.add_argument("--limit", type=positive_int, default=100, help="memories listed at most")
    p.add_argument("--still-true", metavar="URN", help="the memory still holds: stop checking what the code "
                                                       "contradicts, clear its mark")
    p.add_argument("--new-fact", nargs=2, metavar=("URN", "TEXT"), help="record the fact that replaces the memory "
                                                                       "(the old one is superseded; reversible)")


def _project_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--cwd", default=None, help="a directory of the project (default: the current one)")
    p.add_argument("--domain", "-d", default=None, help="the project's domain (default: the one of --cwd)")


def _project(args: argparse.Namespace) -> tuple[Path, str]:
    from subcog_store.code.tree import code_root
    from subcog_store.scope import domain_for

    cwd = args.cwd or os.getcwd()
    root = code_root(cwd)
    if root is None:
        raise InvalidInput(f"{cwd} is not a project directory (not a directory, or the file system root or the "
                           "home directory)")
    return root, args.domain or domain_for(cwd)


def cmd_cite(args: argparse.Namespace) -> int:
    from subcog_store.code.record import cite_existing

    root, domain = _project(args)
    with open_store(args) as store:
        report = cite_existing(store, root, domain, time.monotonic() + COMMAND_SECS, everything=args.all,
                               limit=args.limit)
    data = {"domain": domain, "root": str(root), **report.to_dict()}
    text = (f"{report.memories} memories of {domain} looked at against {root}: {report.cited} cite its code "
            f"({report.citations} citations" + (f", at {len(report.commits)} commits" if report.commits else "")
            + f"); {len(report.marked)} possibly outdated already" + ("" if report.complete else
                                                                       "; stopped at the time limit, run it again"))
    emit(args, data, text)
    return 0


def cmd_verify(args: argparse.Namespace) -> int:
    from subcog_store.code import review
    from subcog_store.code.verify import check_project

    root, domain = _project(args)
    with open_store(args) as store:
        if args.still_true:
            done = review.still_true(store, _id(args.still_true))
            emit(args, done, f"{done['urn']} is current again ({done['claims_dropped']} claims the code contradicted "
                             f"are no longer checked; it was: {done['was']})")
            return 0
        if args.new_fact:
            done = review.new_fact(store, _id(args.new_fact[0]), args.new_fact[1], root)
            emit(args, done, f"recorded {done['new']} ({done['capture']}); {done['old']} is superseded by it "
                             f"(decision {done['decision_id']}; `subcog-store reverse {done['decision_id']}` undoes it)")
            return 0
        report = None if args.list else check_project(store, root, domain, time.monotonic() + COMMAND_SECS,
                                                      everything=args.all)
        marked = review.listed(store, domain, args.limit)
    from subcog_store.text.redact import shown

    for row in marked:
        row["content"] = shown(row["content"])
    data = {"domain": domain, "root": str(root), "check": report.to_dict() if report else None,
            "possibly_outdated": marked}
    lines = []
    if report:
        lines.append(f"checked {report.files} cited files of {domain} ({report.read} read, {report.checked} "
                     f"citations) in {report.ms:.0f} ms: {len(report.marked)} newly marked, {len(report.cleared)} "
                     f"current again" + (f", {len(report.unreadable)} files could not be read (see the log)"
                                         if report.unreadable else ""))
    lines.append(f"{len(marked)} memories may be outdated" + (":" if marked else "."))
    for row in marked:
        lines += [f"  {row['urn']}  (marked {row['outdated_at']})", f"    why: {row['outdated']}",
                  f"    text: {' '.join(row['content'].split())[:200]}"]
    if marked:
        lines.append(REVIEW_HELP)
    emit(args, data, "\n".join(lines))
    return 0


def _id(ref: str) -> str:
    return ref.rsplit("/", 1)[-1]
