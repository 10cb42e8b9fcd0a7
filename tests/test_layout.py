"""The code's layout rules (issue: one home for each rule): no import cycle, modules of one job and modest size,
every SQL statement in sql/, every named query used, no machine path, every setting documented, and the exact
statements one capture runs."""
from __future__ import annotations

import ast
import fnmatch
import functools
import re
import subprocess
from pathlib import Path
from typing import NamedTuple

import apsw

from subcog_store.config import SPECS
from subcog_store.db.sqlfiles import queries

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "subcog_store"
SQL_HOME = {"subcog_store/db/connection.py", "subcog_store/db/sqlfiles.py"}  # the loader and connection set-up
# Modules allowed past MAX_LINES, each with its reason in the README's layout section.
LONG_MODULES = {"subcog_store/text/redact.py"}
MAX_LINES = 400
SQL_START = re.compile(r"^\s*(select|insert|update|delete|create|drop|alter|pragma|with)\s+[\w*(]",
                       re.IGNORECASE)


# The layers, bottom first (the README's layout section lists the same). A module may import, at any depth, only
# modules of its own layer or of a lower one; an import inside a function (a lazy import, for start-up time or an
# optional package) only those of a lower layer, and says why in a comment (on its line, the line above, or once
# at the top of its module: "# Lazy imports: ..."). No cycle at any depth. Patterns: a module, or "package.*".
LAYERS: list[tuple[str, list[str]]] = [
    ("foundation", ["errors", "clock", "text.*", "worker.protocol", "progress"]),
    ("settings", ["config"]),
    ("project", ["scope", "code.git", "code.tree", "code.mentions", "code.claims"]),
    ("extraction", ["extraction.*"]),
    ("data", ["db.sqlfiles", "db.files", "db.connection", "db.locks", "postgres.casefold", "postgres.vectors",
              "postgres.connection", "postgres.deadline", "postgres.local_server",
              "postgres.adapter"]),
    ("tables", ["db.deferred", "db.recent", "db.memories", "db.decisions", "db.vectors", "db.search",
                "db.hook_state", "db.recall_log", "db.checks", "db.settings", "db.batch_runs", "db.integrity",
                "db.export", "db.views", "db.salvage", "db.citations", "db.session_text"]),
    ("knn cache", ["db.bitcache", "db.vectorcache"]),
    ("knn", ["db.knn", "postgres.knn"]),
    ("worker access", ["worker.client", "worker.lifecycle"]),
    ("model", ["model.lexicon", "model.files", "model.embedder"]),
    ("changed-fact guard", ["text.guard*", "text.changes*"]),   # its lexicon is data beside the model
    ("model choice", ["model.provider", "model.embeddings"]),
    ("core", ["core"]),
    ("pair rules", ["dedup.rule", "dedup.outdated"]),
    ("rules", ["inputs", "dedup.plugins", "dedup.check", "dedup.policies", "dedup.session_repeat"]),
    ("one capture", ["dedup.write"]),
    ("services", ["dedup.in_batch", "recall.*", "review", "maintenance", "batch.*", "doctor", "evaluation.pairs",
                  "code.resolve", "code.verify", "code.record", "code.review", "code.touch", "copying"]),
    ("facade", ["store"]),
    ("applications", ["capture.*", "evaluation.evaluate", "transfer", "ui.views"]),
    ("adapter parts", ["claude_code.events", "claude_code.report", "claude_code.recall_hooks",
                       "claude_code.tool_hooks", "mcp.register", "mcp.wire", "mcp.protocol", "mcp.tools", "ui.guard",
                       "ui.pages"]),
    ("adapters", ["claude_code.handlers", "claude_code.install", "claude_code.installed", "claude_code.request",
                  "mcp.server", "ui.app"]),
    ("entries", ["claude_code.entry", "cli.app", "demo"]),
    ("hosts", ["claude_code.command", "claude_code.plugin", "hook.command", "worker.hooks", "worker.backlog",
               "worker.server", "cli.*_cmds"]),
    ("main", ["cli.main", "__main__"]),
]
# Imports that still point up a layer, each to be removed (issue 22): (importer, imported).
KNOWN_UPWARD: set[tuple[str, str]] = set()


def modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def layer_of(module: str) -> int:
    """The index of a module's layer in LAYERS, by its longest matching pattern (`text.guard*` before `text.*`;
    packages' __init__ modules belong to no layer: -1)."""
    short = module.removeprefix("subcog_store.")
    matches = [(len(pattern), index) for index, (_, patterns) in enumerate(LAYERS) for pattern in patterns
               if fnmatch.fnmatchcase(short, pattern)]
    return max(matches)[1] if matches else -1


class Import(NamedTuple):
    target: str
    line: int
    lazy: bool        # inside a function


def package_imports(path: Path, known: set[str]) -> list[Import]:
    """Every import of this package's modules in `path`, at any depth (TYPE_CHECKING blocks excepted: they never
    run). `from pkg import mod` counts as importing `pkg.mod`."""
    found: list[Import] = []

    def visit(node: ast.AST, lazy: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                continue
            inner = lazy or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, ast.ImportFrom) and child.module and child.module.startswith("subcog_store"):
                subs = [f"{child.module}.{a.name}" for a in child.names if f"{child.module}.{a.name}" in known]
                for target in subs or [child.module]:
                    found.append(Import(target, child.lineno, inner))
            elif isinstance(child, ast.Import):
                found.extend(Import(a.name, child.lineno, inner) for a in child.names if a.name.startswith("subcog_store"))
            visit(child, inner)

    visit(ast.parse(path.read_text()), False)
    return [i for i in found if i.target in known]


@functools.lru_cache(maxsize=1)
def import_graph() -> dict[str, list[Import]]:
    mods = modules()
    return {name: [i for i in package_imports(path, set(mods)) if i.target != name] for name, path in mods.items()}


def test_every_module_has_a_layer() -> None:
    loose = sorted(m for m, p in modules().items() if p.name != "__init__.py" and layer_of(m) < 0)
    assert not loose, f"modules in no layer of LAYERS: {loose}"


def test_imports_point_down_the_layers() -> None:
    """Any depth: a module imports its own layer or lower ones; a lazy import only lower ones."""
    wrong = []
    for name, imports in import_graph().items():
        for i in imports:
            here, there = layer_of(name), layer_of(i.target)
            if there < 0 or (name, i.target) in KNOWN_UPWARD:
                continue
            if there > here or (i.lazy and there == here):
                wrong.append(f"{name}:{i.line} imports {i.target} ({'lazily, ' if i.lazy else ''}"
                             f"{LAYERS[here][0]} -> {LAYERS[there][0]})")
    assert not wrong, "imports against the layers:\n" + "\n".join(wrong)


def test_known_upward_imports_still_exist() -> None:
    """The list of imports still to be turned round only shrinks: an entry that is gone must leave it."""
    graph = import_graph()
    stale = {pair for pair in KNOWN_UPWARD if pair[1] not in {i.target for i in graph.get(pair[0], [])}}
    assert not stale, f"remove from KNOWN_UPWARD: {sorted(stale)}"


def test_lazy_imports_say_why() -> None:
    missing = []
    graph = import_graph()
    for name, path in modules().items():
        lines = path.read_text().splitlines()
        if any(line.startswith("# Lazy imports") for line in lines):
            continue
        for i in graph[name]:
            if i.lazy and layer_of(i.target) >= 0 and "#" not in lines[i.line - 1] \
                    and not lines[i.line - 2].strip().startswith("#"):
                missing.append(f"{name}:{i.line}")
    assert not missing, f"lazy imports without a reason: {sorted(set(missing))}"


def test_no_import_cycle() -> None:
    """At any depth (lazy imports included)."""
    graph = {name: {i.target for i in imports} for name, imports in import_graph().items()}
    state: dict[str, int] = {}

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                raise AssertionError("import cycle: " + " -> ".join(stack[stack.index(nxt):] + [nxt]))
            if nxt not in state:
                visit(nxt, stack + [nxt])
        state[node] = 2

    for name in sorted(graph):
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
    defined = set(queries()) | set(queries("postgresql"))
    assert called <= defined, f"used but not defined: {sorted(called - defined)}"
    named = set(re.findall(r"""["']([a-z0-9_]+)["']""", source))   # q(name) with the name held in a variable
    assert defined <= named, f"defined but never used: {sorted(defined - named)}"


def test_only_the_data_layer_touches_the_database() -> None:
    """Above db/, no module runs a named query, executes SQL or imports apsw (a second backend implements db/'s
    modules and nothing else)."""
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE)
        if rel.parts[0] in ("db", "postgres"):   # the data layer: SQLite's, and PostgreSQL's (issue 26)
            continue
        tree = ast.parse(path.read_text())
        typing_only = {id(n) for block in ast.walk(tree) if isinstance(block, ast.If)
                       and "TYPE_CHECKING" in ast.unparse(block.test) for n in ast.walk(block)}
        for node in ast.walk(tree):
            if id(node) in typing_only:
                continue
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "q":
                offenders.append(f"{rel}:{node.lineno}: q(...)")
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in (
                    "execute", "executemany", "setbusytimeout"):
                offenders.append(f"{rel}:{node.lineno}: .{node.func.attr}(...)")
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                if any(n == "apsw" or n.startswith("apsw.") for n in names):
                    offenders.append(f"{rel}:{node.lineno}: import apsw")
                if isinstance(node, ast.ImportFrom) and node.module == "subcog_store.db.sqlfiles":
                    offenders.append(f"{rel}:{node.lineno}: imports db.sqlfiles")
    assert not offenders, "\n".join(offenders)


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
        "begin", "max_memory_seq", "find_exact_match", "find_semantic_candidates", "find_recent_capture", "commit",
        "outdated_candidates", "begin immediate", "pragma defer_foreign_keys = on", "find_exact_match",
        "new_semantic_neighbours", "get_memory", "insert_memory", "insert_vector", "insert_bits", "log_bits",
        "insert_recent_capture", "insert_check",
        "log_decision", "commit"]


def test_the_package_list_matches_the_tree() -> None:
    """pyproject.toml lists the packages by hand (sql/ and models/ are mapped in): none may be forgotten."""
    import tomllib

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    on_disk = {".".join(p.parent.relative_to(ROOT).parts) for p in PACKAGE.rglob("__init__.py")}
    assert listed - {"subcog_store.sql", "subcog_store.models"} == on_disk


def readme_layout() -> str:
    """The README's layout section (from `## Layout` to the next `## ` heading)."""
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("\n## Layout\n") + 1:]
    following = re.search(r"^## ", section[3:], re.MULTILINE)
    return section[:following.start() + 3] if following else section


def readme_layout_modules() -> set[str]:
    """The modules the layout table names. A cell lists paths relative to subcog_store/; a bare name after one with
    a folder is in that folder (`db/memories.py`, `vectors.py` -> db/vectors.py), one before any is top level."""
    listed = set()
    for line in readme_layout().splitlines():
        if not line.startswith("| `"):
            continue
        folder = ""
        for name in re.findall(r"`([^`]+\.py)`", line.split("|")[1]):
            if "/" in name:
                folder = name.rsplit("/", 1)[0] + "/"
                listed.add(name)
            else:
                listed.add(folder + name)
    return listed


def test_the_readme_layout_lists_every_module_and_only_those() -> None:
    """Every module has its row (its one job) in the README's layout table, and every row names a module that
    exists (packages' __init__ modules excepted)."""
    tree = {str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py") if p.name != "__init__.py"}
    listed = readme_layout_modules()
    assert not tree - listed, f"modules without a row in the README's layout table: {sorted(tree - listed)}"
    assert not listed - tree, f"README layout rows naming no module: {sorted(listed - tree)}"


def test_every_long_module_has_its_reason_in_the_readme() -> None:
    """A module allowed past MAX_LINES is named, with its reason, in the layout section's first paragraph."""
    first_paragraph = readme_layout().split("\n\n")[1]
    unnamed = [m for m in LONG_MODULES if f"`{m.removeprefix('subcog_store/')}`" not in first_paragraph]
    assert not unnamed, f"long modules the README's layout section gives no reason for: {unnamed}"
