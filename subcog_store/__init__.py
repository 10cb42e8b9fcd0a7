"""subcog-store: a memory store for AI coding assistants that never stores the same thing twice."""

__version__ = "0.1.0"   # the one place the version is written (pyproject.toml and the plugin's manifest read it)
