"""The code's layout rules (issue: one home for each rule): no import cycle, modules of one job and modest size,
every SQL statement in sql/, every named query used, no machine path, every setting documented, and the exact
statements one capture runs."""
from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path

import apsw
import pytest

from subcog_store.config import SPECS
from subcog_store.db.sqlfiles import q, queries

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "subcog_store"
SQL_HOME = {"subcog_store/db/connection.py", "subcog_store/db/sqlfiles.py"}  # the loader and connection set-up
# Modules allowed past MAX_LINES, each with its reason in the README's layout section.
LONG_MODULES = {"subcog_store/text/guard.py", "subcog_store/text/redact.py"}
MAX_LINES = 400
SQL_START = re.compile(r"^\s*(select|insert|update|delete|create|drop|alter|pragma|with)\s+[\w*(]",
                       re.IGNORECASE)


def modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def top_level_imports(path: Path, known: set[str]) -> set[str]:
    """Modules of this package imported when `path` is imported (not inside functions or TYPE_CHECKING)."""
    found = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            continue
        for sub in ast.walk(node) if not isinstance(node, (ast.FunctionDef, ast.ClassDef)) else []:
            if isinstance(sub, ast.ImportFrom) and sub.module and sub.module.startswith("subcog_store"):
                found.add(sub.module)
                found.update(f"{sub.module}.{a.name}" for a in sub.names if f"{sub.module}.{a.name}" in known)
            elif isinstance(sub, ast.Import):
                found.update(a.name for a in sub.names if a.name.startswith("subcog_store"))
    return {m for m in found if m in known}


def test_no_import_cycle() -> None:
    mods = modules()
    graph = {name: top_level_imports(path, set(mods)) - {name} for name, path in mods.items()}
    state: dict[str, int] = {}

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        for nxt in graph[node]:
            if state.get(nxt) == 1:
                raise AssertionError("import cycle: " + " -> ".join(stack[stack.index(nxt):] + [nxt]))
            if nxt not in state:
                visit(nxt, stack + [nxt])
        state[node] = 2

    for name in graph:
        if name not in state:
            visit(name, [name])


def test_modules_are_modest() -> None:
    long = {str(p.relative_to(ROOT)) for p in PACKAGE.rglob("*.py") if len(p.read_text().splitlines()) > MAX_LINES}
    assert long <= LONG_MODULES, f"over {MAX_LINES} lines: {sorted(long - LONG_MODULES)}"


def test_no_sql_outside_sql_directory() -> None:
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        rel = str(path.relative_to(ROOT))
        if rel in SQL_HOME:
            continue
        tree = ast.parse(path.read_text())
        docstrings = {id(n.body[0].value) for n in ast.walk(tree) if isinstance(n, (ast.Module, ast.ClassDef,
                      ast.FunctionDef)) and n.body and isinstance(n.body[0], ast.Expr)}
        for node in ast.walk(tree):
            if id(node) in docstrings:
                continue
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and SQL_START.match(node.value) \
                    and re.search(r"\b(from|into|set|table|values|where)\b", node.value, re.IGNORECASE):
                offenders.append(f"{rel}:{node.lineno}: {node.value[:60]!r}")
    assert not offenders, offenders


def test_every_named_query_is_used() -> None:
    source = "\n".join(p.read_text() for p in PACKAGE.rglob("*.py"))
    called = set(re.findall(r"""\bq\(\s*["']([a-z0-9_]+)["']""", source))
    assert called <= set(queries()), f"used but not defined: {sorted(called - set(queries()))}"
    named = set(re.findall(r"""["']([a-z0-9_]+)["']""", source))   # q(name) with the name held in a variable
    assert set(queries()) <= named, f"defined but never used: {sorted(set(queries()) - named)}"


def test_no_machine_path_in_the_tree() -> None:
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True,
                           text=True).stdout.split()
    pattern = re.compile("|".join(["/" + "work/", "/" + "root/", "/" + "Users/[a-z]"]))
    hits = [f for f in files if (ROOT / f).is_file() and not f.startswith("samples/")
            and pattern.search((ROOT / f).read_text(errors="replace"))]
    assert not hits, hits


def test_every_setting_is_documented_and_known() -> None:
    readme = (ROOT / "README.md").read_text()
    documented = set(re.findall(r"SUBCOG_[A-Z0-9_]+", readme))
    namespaced = {s.env for s in SPECS.values() if re.search(r"_(THRESHOLD|POLICY)_(?!DEFAULT)", s.env)}
    missing = {s.env for s in SPECS.values()} - namespaced - documented
    assert not missing, f"settings missing from the README: {sorted(missing)}"
    source = "\n".join(p.read_text() for p in PACKAGE.rglob("*.py"))
    referenced = set(re.findall(r"SUBCOG_[A-Z0-9_]+[A-Z0-9]", source)) - {"SUBCOG_"}
    unknown = {v for v in referenced if v not in {s.env for s in SPECS.values()}}
    assert not unknown, f"variables read outside config.SPECS: {sorted(unknown)}"


def test_one_capture_runs_exactly_these_statements(store) -> None:
    """What one new capture runs, in order (sqlite-utils' tracer test, with apsw's exec tracer)."""
    store.capture("We decided to keep the recent-capture window at five minutes for every namespace.", "decisions")
    seen: list[str] = []

    def trace(cursor: apsw.Cursor, sql: str, bindings) -> bool:
        seen.append(" ".join(sql.split()))
        return True

    store.con.exec_trace = trace
    store.capture("Retries use exponential backoff starting at two hundred milliseconds, capped at ten seconds.",
                  "patterns")
    store.con.exec_trace = None
    named = {" ".join(text.split()): name for name, text in queries().items()}
    names = [named.get(s, s) for s in seen]
    assert names == [
        "begin", "find_exact_match", "find_semantic_candidates", "find_recent_capture", "commit",
        "begin immediate", "pragma defer_foreign_keys = on", "find_exact_match", "get_memory",
        "insert_memory", "insert_vector", "insert_bits", "log_bits", "insert_recent_capture", "insert_check",
        "log_decision", "commit"]


def test_the_package_list_matches_the_tree() -> None:
    """pyproject.toml lists the packages by hand (sql/ and models/ are mapped in): none may be forgotten."""
    import tomllib

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    on_disk = {".".join(p.parent.relative_to(ROOT).parts) for p in PACKAGE.rglob("__init__.py")}
    assert listed - {"subcog_store.sql", "subcog_store.models"} == on_disk
