"""Settings: environment variables over the database's `settings` table over the defaults.

Every setting has an environment variable `SUBCOG_<NAME>` and a `settings` row keyed `<name>` (lower case).
A value that does not parse or is out of range raises ConfigError naming the variable.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Callable, Mapping

from subcog_store.errors import ConfigError
from subcog_store.text.namespaces import NAMESPACES, env_suffix

POLICIES = ("skip", "verify", "replace", "merge")
DEFAULT_THRESHOLDS = {"decisions": 0.92, "patterns": 0.90, "learnings": 0.88}
MAX_CONTENT_BYTES = 64 * 1024


def _bool(text: str) -> bool:
    value = text.strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    raise ValueError("expected true or false")


def _choice(*allowed: str) -> Callable[[str], str]:
    def parse(text: str) -> str:
        value = text.strip().lower()
        if value not in allowed:
            raise ValueError(f"expected one of {', '.join(allowed)}")
        return value
    return parse


@dataclass(frozen=True)
class Spec:
    key: str
    parse: Callable[[str], object]
    default: object
    low: float | None = None
    high: float | None = None

    @property
    def env(self) -> str:
        return "SUBCOG_" + self.key.upper()


def _specs() -> list[Spec]:
    specs = [
        Spec("dedup_enabled", _bool, True),
        Spec("dedup_semantic_enabled", _bool, True),
        Spec("dedup_threshold_default", float, 0.90, 0.0, 1.0),
        Spec("dedup_time_window_secs", int, 300, 0, 10 * 365 * 86400),
        Spec("dedup_cache_capacity", int, 1000, 1, 10_000_000),
        Spec("dedup_min_semantic_length", int, 50, 0, MAX_CONTENT_BYTES),
        Spec("dedup_text_threshold", float, 0.80, 0.0, 1.0),
        Spec("dedup_policy_default", _choice(*POLICIES), "skip"),
        Spec("verify_reject_threshold", float, 0.98, 0.0, 1.0),
        Spec("verify_gray_threshold", float, 0.88, 0.0, 1.0),
        Spec("verify_fallback", _choice("keep", "reject"), "keep"),
        Spec("replace_threshold", float, 0.95, 0.0, 1.0),
        Spec("replace_merge_threshold", float, 0.90, 0.0, 1.0),
        Spec("merge_threshold", float, 0.90, 0.0, 1.0),
        Spec("verify_cmd", str, ""),
        Spec("merge_cmd", str, ""),
        Spec("plugin_timeout_secs", float, 10.0, 0.1, 600.0),
    ]
    for namespace in NAMESPACES:
        suffix = env_suffix(namespace).lower()
        specs.append(Spec(f"dedup_threshold_{suffix}", float, DEFAULT_THRESHOLDS.get(namespace), 0.0, 1.0))
        specs.append(Spec(f"dedup_policy_{suffix}", _choice(*POLICIES), None))
    return specs


SPECS: dict[str, Spec] = {spec.key: spec for spec in _specs()}


def _parse(spec: Spec, raw: str, origin: str) -> object:
    try:
        value = spec.parse(raw)
    except ValueError as e:
        raise ConfigError(f"{origin} = {raw!r} does not parse: {e}") from None
    if spec.low is not None and not (spec.low <= value <= spec.high):  # type: ignore[operator]
        raise ConfigError(f"{origin} = {raw!r} is out of range ({spec.low} to {spec.high})")
    return value


@dataclass(frozen=True)
class Settings:
    """The effective settings; `values` maps each key to its value, `origins` says where it came from."""

    values: dict[str, object] = field(default_factory=dict)
    origins: dict[str, str] = field(default_factory=dict)

    @classmethod
    def load(cls, stored: Mapping[str, str] | None = None, environ: Mapping[str, str] | None = None) -> "Settings":
        environ = os.environ if environ is None else environ
        stored = stored or {}
        values, origins = {}, {}
        for key, spec in SPECS.items():
            if spec.env in environ:
                values[key], origins[key] = _parse(spec, environ[spec.env], spec.env), "env"
            elif key in stored:
                values[key], origins[key] = _parse(spec, str(stored[key]), f"settings.{key}"), "settings"
            else:
                values[key], origins[key] = spec.default, "default"
        return cls(values, origins)

    def __getattr__(self, key: str) -> object:
        try:
            return self.values[key]
        except KeyError:
            raise AttributeError(key) from None

    def threshold(self, namespace: str) -> float:
        """The semantic threshold of a namespace (inclusive)."""
        value = self.values.get(f"dedup_threshold_{env_suffix(namespace).lower()}")
        return float(value if value is not None else self.values["dedup_threshold_default"])

    def policy(self, namespace: str) -> str:
        value = self.values.get(f"dedup_policy_{env_suffix(namespace).lower()}")
        return str(value or self.values["dedup_policy_default"])
