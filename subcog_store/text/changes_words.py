"""The word lists and patterns of the changed-facts-by-subject judgement (`text.changes`), hand-made, English.

Written from the issue's examples (replacement language: "switched to", "moved from X to Y", "instead of",
"no longer", "upgraded to", "bumped", "raised/lowered to", "replaced by") and the first recall set's changed
facts; bench/recall/RESULTS.md has what they find on both sets.
"""
from __future__ import annotations

import re

# Replacement language (in the newer text, not already in the older): verbs of change with their particle.
CUES = re.compile(r"""\b(?:
    (?:switch|switched|switching|move|moved|moving|migrate|migrated|migrating|ported)
        \b[^.;]{0,40}?\b(?:to|from|over|off|onto|away)\b
  | (?:upgrade|upgraded|upgrading|downgrade|downgraded|bump|bumped|bumping|raise|raised|raising|lower|lowered
      |lowering|increase|increased|increasing|decrease|decreased|decreasing|reduce|reduced|reducing|cut|extend
      |extended|shorten|shortened|change|changed|changing|update|updated)\b[^.;]{0,40}?\bto\b
  | (?:upgraded|bumped|replaced|replaces|replacing|swapped|swap|dropped|removed|retired|deprecated|abandoned
      |ditched|superseded|reverted|rolled\s+back|went\s+back|no\s+longer|stopped\s+using|instead\s+of|in\s+place\s+of
      |not\s+\w+\s+any\s?more|any\s?more|from\s+now\s+on|nowadays|these\s+days|previously|formerly|used\s+to)
  | (?:is|are|was|were|has\s+been|have\s+been)\s+now | now\s+(?!on\b|and\b|or\b|that\b|the\b)[a-z]+
  | new\s+(?:default|limit|value|version|setting)
)\b""", re.IGNORECASE | re.VERBOSE)
# After these the replaced (old) value follows; before "replaced by" / "is gone" it precedes.
OLD_AFTER = re.compile(r"\b(?:from(?=\s+\S+(?:\s+\S+){0,3}\s+to\b)|instead\s+of|in\s+place\s+of|replaced|replacing"
                       r"|replaces|swapped\s+out|dropped"
                       r"|removed|retired|deprecated|ditched|abandoned|no\s+longer(?:\s+\w+)?|stopped\s+using"
                       r"|rather\s+than|off|away\s+from|over)\b", re.IGNORECASE)
OLD_BEFORE = re.compile(r"\b(?:(?:was|were|is|are|has\s+been|have\s+been|got)\s+(?:replaced|dropped|removed|retired"
                        r"|deprecated|superseded|deleted)|is\s+gone|are\s+gone|went\s+away)\b", re.IGNORECASE)
# Cues strong enough that a plain word right after them names the replaced thing ("instead of batches").
STRONG = re.compile(r"instead|in\s+place|replac|no\s+longer|stopped|rather|away|dropped|removed|retired|deprecated"
                     r"|ditched|abandoned|swapped|(?:was|were|is|are|has|have|got)\b", re.IGNORECASE)
# After these cues the new value follows ("moved to X", "now uses X"); before "instead of" it precedes.
NEW_BEFORE = re.compile(r"\b(?:instead\s+of|in\s+place\s+of|rather\s+than)\b", re.IGNORECASE)
NEGATING = re.compile(r"\b(?:no\s+longer|stopped\s+using|not\s+\w+\s+any\s?more|dropped|removed|retired"
                       r"|deprecated)\b", re.IGNORECASE)

# Words that say nothing about what a fact is about: a subject needs more than these.
GENERIC = frozenset("""
use uses used using run runs ran running set sets now new old current currently default value values thing
things way make makes made get gets got go goes went keep keeps kept put take takes took need needs needed want
wants one two three also still just always never every each per via instead rather back over away off since
team project code app we our they it its switch switched move moved change changed update updated upgrade
upgraded bump bumped raise raised lower lowered increase increased decrease decreased reduce reduced replace
replaced replaces drop dropped remove removed longer anymore today earlier later previously formerly because
reason due so which fine good better best work works working worked like
""".split())
DIMENSION = {"ns": ("time", 1e-9), "us": ("time", 1e-6), "ms": ("time", 1e-3), "second": ("time", 1.0),
              "minute": ("time", 60.0), "hour": ("time", 3600.0), "day": ("time", 86400.0),
              "week": ("time", 604800.0), "month": ("time", 2592000.0), "year": ("time", 31536000.0),
              "byte": ("size", 1.0), "kb": ("size", 1e3), "mb": ("size", 1e6), "gb": ("size", 1e9),
              "tb": ("size", 1e12)}
# Words that say how often: a quantity of time without a number.
EVERY = {"hourly": 3600.0, "daily": 86400.0, "nightly": 86400.0, "weekly": 604800.0, "monthly": 2592000.0}
# Words that may stand between a name and its value ("IPFS_LOCAL_API_URL, which defaults to ...").
LINK_WORDS = frozenset("to from at on is are = v version which defaults default points set sets now of as".split())
