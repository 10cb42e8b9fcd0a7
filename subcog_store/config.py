"""Every `SUBCOG_*` variable and every path, parsed and validated here and nowhere else.

Two kinds of setting:
- store settings (`SCOPE_STORE`): the environment variable, else the database's `settings` row (key in lower
  case, without the prefix), else the default;
- process settings (`SCOPE_PROCESS`): the environment variable, else the default (paths, hook and batch knobs).
A value that does not parse, is not finite or is out of range raises ConfigError naming the variable. The CLI
exits 3 with that message; the hooks fail open and put it in the log and the systemMessage.
"""
from __future__ import annotations

import logging
import math
import os
import re
import sys
from pathlib import Path
from typing import Callable, Mapping

from subcog_store.errors import ConfigError
from subcog_store.text.namespaces import NAMESPACES, env_suffix
from subcog_store.worker.protocol import CAPTURE_TIMEOUT_SECS, HOOK_BUDGET_SECS

POLICIES = ("skip", "verify", "replace", "merge")
DEFAULT_THRESHOLDS = {"decisions": 0.92, "patterns": 0.90, "learnings": 0.88}
MAX_CONTENT_BYTES = 64 * 1024
SCOPE_STORE, SCOPE_PROCESS = "store", "process"
# Store settings the pruning trigger of recent_captures reads (through subcog_setting() for overrides).
TRIGGER_SETTINGS = ("dedup_time_window_secs", "dedup_cache_capacity")
CHECKOUT = Path(__file__).resolve().parents[1]      # the source tree this package runs from, if any


def _bool(text: str) -> bool:
    value = text.strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    raise ValueError("expected true or false")


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError("expected a finite number")
    return value


def _int(text: str) -> int:
    if len(text.strip()) > 19:
        raise ValueError("too many digits")
    return int(text)


def _text(text: str) -> str:
    return text


def _label(text: str) -> str:
    value = text.strip()
    if not value or "/" in value or len(value) > 100:
        raise ValueError("expected a non-empty label of at most 100 characters, no '/'")
    if any(ord(ch) < 32 or 0xD800 <= ord(ch) <= 0xDFFF for ch in value):
        raise ValueError("expected printable text in UTF-8")
    return value


def _choice(*allowed: str) -> Callable[[str], str]:
    def parse(text: str) -> str:
        value = text.strip().lower()
        if value not in allowed:
            raise ValueError(f"expected one of {', '.join(allowed)}")
        return value
    return parse


class Spec:
    """One setting: its key (the variable is SUBCOG_<KEY>), parser, default, range and scope."""

    __slots__ = ("key", "parse", "default", "low", "high", "scope", "help")

    def __init__(self, key: str, parse: Callable[[str], object], default: object, low: float | None = None,
                 high: float | None = None, scope: str = SCOPE_STORE, help: str = ""):
        self.key, self.parse, self.default, self.low, self.high = key, parse, default, low, high
        self.scope, self.help = scope, help

    @property
    def env(self) -> str:
        return "SUBCOG_" + self.key.upper()


def _specs() -> list[Spec]:
    p = SCOPE_PROCESS
    specs = [
        Spec("dedup_enabled", _bool, True),
        Spec("dedup_semantic_enabled", _bool, True),
        Spec("dedup_threshold_default", _float, 0.90, 0.0, 1.0),
        Spec("dedup_time_window_secs", _int, 300, 0, 10 * 365 * 86400),
        Spec("dedup_cache_capacity", _int, 1000, 1, 10_000_000),
        Spec("dedup_min_semantic_length", _int, 50, 0, MAX_CONTENT_BYTES),
        Spec("dedup_text_threshold", _float, 0.80, 0.0, 1.0),
        Spec("dedup_policy_default", _choice(*POLICIES), "skip"),
        Spec("verify_reject_threshold", _float, 0.98, 0.0, 1.0),
        Spec("verify_gray_threshold", _float, 0.88, 0.0, 1.0),
        Spec("verify_fallback", _choice("keep", "reject"), "keep"),
        Spec("replace_threshold", _float, 0.95, 0.0, 1.0),
        Spec("replace_merge_threshold", _float, 0.90, 0.0, 1.0),
        Spec("merge_threshold", _float, 0.90, 0.0, 1.0),
        Spec("verify_cmd", _text, ""),
        Spec("merge_cmd", _text, ""),
        Spec("plugin_timeout_secs", _float, 10.0, 0.1, 600.0),
        Spec("recall_enabled", _bool, True),
        Spec("recall_min_similarity", _float, 0.40, -1.0, 1.0, help="prompt recall: the abstain gate's floor (cosine)"),
        Spec("recall_min_text_match", _float, 0.40, 0.0, 1.0, help="prompt recall without the model: the gate"),
        Spec("recall_prompt_limit", _int, 3, 0, 20),
        Spec("recall_prompt_tokens", _int, 300, 0, 100_000),
        Spec("recall_start_tokens", _int, 500, 0, 100_000),
        Spec("recall_session_tokens", _int, 3000, 0, 1_000_000),
        Spec("recall_touch_limit", _int, 3, 0, 20, help="recall on touch: memories per file read or edited"),
        Spec("recall_touch_tokens", _int, 250, 0, 100_000, help="recall on touch: tokens per file or error"),
        Spec("code_enabled", _bool, True, help="citations at capture, the code check at session start, recall "
                                               "on touch"),
        Spec("code_check_secs", _float, 0.5, 0.0, 60.0, help="the session-start check of cited code: at most "
                                                             "this long (the rest is checked next time)"),
        Spec("session_text_enabled", _bool, True, help="false: the sessions' text is neither kept nor searched"),
        # process settings
        Spec("db", _text, None, scope=p, help="database file"),
        Spec("model_dir", _text, None, scope=p, help="where model.onnx and tokenizer.json are"),
        Spec("hook_log", _text, None, scope=p, help="the hooks' log file"),
        Spec("hook_budget_secs", _float, HOOK_BUDGET_SECS, 0.1, 600.0, scope=p),
        Spec("hook_min_confidence", _float, None, 0.0, 1.0, scope=p, help="default: the scorer's own threshold"),
        Spec("hook_include_sidechain", _bool, False, scope=p),
        Spec("hook_domain", _label, None, scope=p),
        Spec("worker_enabled", _bool, True, scope=p, help="false: no warm worker; every hook and command works "
                                                           "in its own process"),
        Spec("worker_idle_secs", _float, 900.0, 1.0, 7 * 86400.0, scope=p, help="the warm worker exits after "
                                                                                  "this long without a request"),
        Spec("knn_cache_min_rows", _int, 50_000, 0, 10**12, scope=p, help="the warm worker and the MCP server "
             "hold the sign bits of a scope with at least this many memories in memory (db/bitcache.py; a tenth of it "
             "on PostgreSQL)"),
        Spec("hook_timeout_secs", _float, CAPTURE_TIMEOUT_SECS, 1.0, 3600.0, scope=p, help="the client's timeout "
             "for the capture hooks (`install-hooks` writes 30 s): a capture's minimum of work stops 5 s before it"),
        Spec("hook_answer_secs", _float, 0.01, 0.0, 600.0, scope=p, help="a capture hook the warm worker runs "
             "answers when its capture is done or after this long, whichever is first; the capture then finishes "
             "in the background"),
        Spec("dedup_batch_threshold", _float, None, 0.0, 1.0, scope=p),
        Spec("dedup_batch_knn", _choice("matrix", "vec0"), "matrix", scope=p),
        Spec("batch_test_sleep", _float, 0.0, 0.0, 60.0, scope=p, help="tests only: pause after each cluster"),
        Spec("test_postgres_url", _text, None, scope=p, help="tests and benchmarks only: the PostgreSQL server to "
             "use instead of starting the pgserver wheel's"),
    ]
    for namespace in NAMESPACES:
        suffix = env_suffix(namespace).lower()
        specs.append(Spec(f"dedup_threshold_{suffix}", _float, DEFAULT_THRESHOLDS.get(namespace), 0.0, 1.0))
        specs.append(Spec(f"dedup_policy_{suffix}", _choice(*POLICIES), None))
    return specs


SPECS: dict[str, Spec] = {spec.key: spec for spec in _specs()}


def _parse(spec: Spec, raw: str, origin: str) -> object:
    if len(raw) > 4096:
        raise ConfigError(f"{origin} is longer than 4096 characters")
    raw_shown = raw.encode("utf-8", "replace").decode("utf-8")  # a lone surrogate from the environment
    try:
        value = spec.parse(raw)
    except (ValueError, OverflowError) as e:
        raise ConfigError(f"{origin} = {raw_shown[:80]!r} does not parse: {e}") from None
    if spec.low is not None and not (spec.low <= value <= spec.high):  # type: ignore[operator]
        raise ConfigError(f"{origin} = {raw_shown[:80]!r} is out of range ({spec.low} to {spec.high})")
    return value


class Settings:
    """The effective settings: `values[key]` and `origins[key]` (env, settings or default), also as attributes."""

    def __init__(self, values: dict[str, object], origins: dict[str, str], environ: Mapping[str, str]):
        self.values, self.origins, self._environ = values, origins, environ

    @classmethod
    def load(cls, stored: Mapping[str, str] | None = None, environ: Mapping[str, str] | None = None) -> "Settings":
        environ = os.environ if environ is None else environ
        stored = stored or {}
        values, origins = {}, {}
        for key, spec in SPECS.items():
            if environ.get(spec.env, "") != "" or (spec.env in environ and spec.scope == SCOPE_STORE):
                values[key], origins[key] = _parse(spec, environ[spec.env], spec.env), "env"
            elif spec.scope == SCOPE_STORE and key in stored:
                values[key], origins[key] = _parse(spec, str(stored[key]), f"settings.{key}"), "settings"
            else:
                values[key], origins[key] = spec.default, "default"
        return cls(values, origins, environ)

    def __getattr__(self, key: str) -> object:
        try:
            return self.__dict__["values"][key]
        except KeyError:
            raise AttributeError(key) from None

    def threshold(self, namespace: str) -> float:
        """The semantic threshold of a namespace (inclusive)."""
        value = self.values.get(f"dedup_threshold_{env_suffix(namespace).lower()}")
        return float(value if value is not None else self.values["dedup_threshold_default"])

    def policy(self, namespace: str) -> str:
        value = self.values.get(f"dedup_policy_{env_suffix(namespace).lower()}")
        return str(value or self.values["dedup_policy_default"])

    def overrides(self) -> dict[str, float]:
        """This process's overrides of the settings the pruning trigger reads (subcog_setting() in SQL)."""
        return {k: self.values[k] for k in TRIGGER_SETTINGS if self.origins[k] == "env"}  # type: ignore[misc]

    @property
    def environ(self) -> Mapping[str, str]:
        """The environment these settings were read from."""
        return self._environ

    @property
    def model_dir(self) -> Path | None:
        """SUBCOG_MODEL_DIR when this settings' environment sets it (else None: the process's own is used)."""
        return model_dir(self._environ) if self._environ.get("SUBCOG_MODEL_DIR") else None


def process_setting(key: str, environ: Mapping[str, str] | None = None) -> object:
    """One process setting: the environment variable, else the default (raises ConfigError naming it)."""
    environ = os.environ if environ is None else environ
    spec = SPECS[key]
    raw = environ.get(spec.env, "")
    return _parse(spec, raw, spec.env) if raw != "" else spec.default


def process_setting_or_default(key: str, warn: Callable[[str], None], environ: Mapping[str, str] | None = None
                               ) -> object:
    """`process_setting`, or its default when the environment's value does not parse (`warn` gets why)."""
    try:
        return process_setting(key, environ)
    except ConfigError as e:
        warn(f"{e}; using the default")
        return SPECS[key].default


# ------------------------------------------------------------------------------------------------ paths

def _home(environ: Mapping[str, str]) -> Path:
    return Path(environ.get("HOME") or Path.home())


def data_dir(environ: Mapping[str, str] | None = None) -> Path:
    """`$XDG_DATA_HOME/subcog-store` (default ~/.local/share/subcog-store)."""
    environ = os.environ if environ is None else environ
    return Path(environ.get("XDG_DATA_HOME") or _home(environ) / ".local" / "share") / "subcog-store"


def state_dir(environ: Mapping[str, str] | None = None) -> Path:
    """`$XDG_STATE_HOME/subcog-store` (default ~/.local/state/subcog-store)."""
    environ = os.environ if environ is None else environ
    return Path(environ.get("XDG_STATE_HOME") or _home(environ) / ".local" / "state") / "subcog-store"


def db_path(environ: Mapping[str, str] | None = None) -> Path | str:
    """`SUBCOG_DB`, else `$XDG_DATA_HOME/subcog-store/memories.db` (a PostgreSQL store: its connection string)."""
    value = process_setting("db", environ)
    return db_target(str(value), "SUBCOG_DB") if value else data_dir(environ) / "memories.db"


def default_db_path(environ: Mapping[str, str] | None = None) -> Path | str:
    """`db_path`, its directory created when it is the default one (an explicit SUBCOG_DB is used as given)."""
    path = db_path(environ)
    if not process_setting("db", environ):
        path.parent.mkdir(parents=True, exist_ok=True)   # type: ignore[union-attr]
    return path


_CONNINFO_KEY = re.compile(r"^\s*[A-Za-z_]+\s*=")


def is_postgres(target: object) -> bool:
    """Whether a `--db` / SUBCOG_DB value names a PostgreSQL store (a URL or a libpq key=value string)."""
    text = str(target)
    return text.startswith(("postgresql://", "postgres://")) or bool(_CONNINFO_KEY.match(text))


def db_target(value: str, where: str = "--db") -> Path | str:
    """A `--db` / SUBCOG_DB value: a database file's path, or a PostgreSQL connection string as given. A
    connection string holding a password is refused (ConfigError): a command line is visible to every user of
    the machine and kept in shell history, and SUBCOG_DB is written into hook commands; libpq's own places keep
    it (PGPASSWORD, ~/.pgpass or PGPASSFILE, a service file with `service=NAME`)."""
    if not is_postgres(value):
        return Path(value)
    if conninfo_password(value, where):
        raise ConfigError(
            f"{where}: the connection string holds a password; subcog-store never takes one there (a command "
            "line is visible in `ps` and shell history, and hook commands are written to settings.json). Keep it "
            "where libpq looks: ~/.pgpass (or PGPASSFILE), a service file (PGSERVICEFILE, then `--db "
            "service=NAME`), or PGPASSWORD in the environment")
    return value


def conninfo_password(conninfo: str, where: str = "--db") -> bool:
    """Whether a PostgreSQL connection string holds a non-empty password (ConfigError, quoting none of it,
    when libpq cannot parse it)."""
    try:
        from psycopg.conninfo import conninfo_to_dict
    except ImportError:   # no psycopg: the store cannot open anyway; look for the usual forms
        return bool(re.search(r"://[^/@]*:[^/@]+@|password\s*=", conninfo))
    try:
        return bool(conninfo_to_dict(conninfo).get("password"))
    except Exception:  # noqa: BLE001 - libpq's parse error may quote the string: say nothing of it
        raise ConfigError(f"{where}: not a usable PostgreSQL connection string (libpq cannot parse it)") from None


def hook_log_path(environ: Mapping[str, str] | None = None, fallback: bool = False) -> Path:
    """`SUBCOG_HOOK_LOG`, else `$XDG_STATE_HOME/subcog-store/hook.log`; with `fallback`, a value that does not
    parse gives os.devnull (its own check reports it) instead of raising."""
    try:
        value = process_setting("hook_log", environ)
    except ConfigError:
        if not fallback:
            raise
        return Path(os.devnull)
    return Path(str(value)) if value else state_dir(environ) / "hook.log"


STDERR_PREFIX = "subcog-store: "   # every line a command writes on stderr begins so (its log records too)


def log_to_stderr(level: int = logging.WARNING) -> None:
    """A command's log: records at `level` and up on stderr, each line as `tell_user` writes one. The hooks never
    write on stderr (send_to_hook_log)."""
    logging.basicConfig(level=level, format=STDERR_PREFIX + "%(message)s")


def tell_user(message: str) -> None:
    """One line on stderr for the person who ran a command (an error, a summary beside the output)."""
    print(STDERR_PREFIX + message, file=sys.stderr)


def send_to_hook_log(logger: logging.Logger, path: Path) -> bool:
    """Send `logger`'s records (INFO and up) to the hook log file at `path`, in its one line format, and nowhere
    else: nothing reaches stderr, a failing write prints no traceback. False (records dropped) when the file
    cannot be opened. The hooks' log and the warm worker's both set up here."""
    logger.propagate = False
    logger.setLevel(logging.INFO)
    logging.raiseExceptions = False   # a failing log write (full disk, /dev/full) must not print a traceback
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handler: logging.Handler = logging.FileHandler(path, encoding="utf-8")
    except (OSError, ValueError):
        logger.addHandler(logging.NullHandler())
        return False
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    logger.addHandler(handler)
    return True


def model_dir(environ: Mapping[str, str] | None = None) -> Path:
    """`SUBCOG_MODEL_DIR`, else `models/` of the source checkout when running from one, else
    `$XDG_DATA_HOME/subcog-store/models` (where an installed package fetches its model on first need)."""
    value = process_setting("model_dir", environ)
    if value:
        return Path(str(value))
    checkout = CHECKOUT / "models"
    if (checkout / RESOURCE_MARKERS["models"]).is_file():
        return checkout
    return data_dir(environ) / "models"


RESOURCE_MARKERS = {"sql": "schema/001_store.sql", "models": "manifest.json"}


def resource_dir(name: str) -> Path:
    """`sql/` or `models/` shipped with the package: the checkout's copy, else the installed package data."""
    for candidate in (CHECKOUT / name, Path(__file__).resolve().parent / name):
        if (candidate / RESOURCE_MARKERS[name]).is_file():
            return candidate
    raise ConfigError(f"{name}/ is missing from this installation of subcog-store (looked in {CHECKOUT / name} "
                      f"and {Path(__file__).resolve().parent / name}); reinstall the package")
