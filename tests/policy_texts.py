"""Text pairs shared by the policy, plugin and review tests (cosines with the int8 MiniLM model)."""
import shlex
import sys
from pathlib import Path

PLUGINS = Path(__file__).resolve().parent / "plugins"
NS = "decisions"  # semantic threshold 0.92 by default
A = "We decided to use PostgreSQL as the primary database for the billing service."
# (older, newer) pairs; none of them is a changed fact.
NEAR = (A, "We decided to use PostgreSQL as the primary database for the billing service!")        # ~0.986
GRAY = (A, "The billing service will use PostgreSQL as its primary database.")                       # ~0.945
# ~0.920; the built-in merger keeps the older text's second sentence, which the newer one lacks
MERGEABLE = ("We decided to use PostgreSQL as the primary database for the billing service because of its strong "
             "transactional guarantees and mature tooling. It replaces MySQL.",
             "For the billing service we chose PostgreSQL as the primary database because of its strong "
             "transactional guarantees and mature tooling.")
MERGED = MERGEABLE[1] + " It replaces MySQL."
FAR = (A, "PostgreSQL was chosen as the main datastore of the billing service.")                       # ~0.805


def cmd(script: str, mode: str) -> str:
    """The command line of a scripted plugin in tests/plugins/ (verifier.py, merger.py) in one mode."""
    return f"{shlex.quote(sys.executable)} {shlex.quote(str(PLUGINS / script))} {mode}"
