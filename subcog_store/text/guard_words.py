"""The word lists of the changed-fact guard (`text.guard`), hand-made, English, lower case.

Each list is small and says what it is for; `docs/guard.md` explains the rules that use them. Nothing here was
fitted to a test set: the lists of the original guard (stop words, negators, privative verbs, number words,
units, months, opposites) were written with MRPC train, the order lists (prepositions, markers, movable words,
reporting verbs, list separators) with PAWS dev and MRPC train.
"""
from __future__ import annotations

STOPWORDS = frozenset("""
a an the and or but if then else so as at by for from in into of on onto to with within via per than that this
these those there here it its it's itself is are was were be been being am do does did done doing has have had
having will would shall should can could may might must i me my we us our ours you your he him his she her they
them their theirs what which who whom whose when where why how all any both each either few more most other some
such only own same too very just also s t also again further once about above after against below between during
before through under until up down out off over while because since though although whether not no nor never
""".split())

NEGATORS = frozenset("""
not no never none nobody nothing nowhere neither nor cannot without n't unless unable non except
dont doesnt didnt isnt arent wasnt werent cant couldnt wouldnt shouldnt wont hasnt havent hadnt mustnt
""".split())
# Verbs that negate what follows: "drop Python 3.8 support" = "Python 3.8 is no longer supported",
# "declined to comment" = "would not comment"; and words negative in themselves ("missing", "unavailable").
# Counted like a negator, but no word is read as what they negate (they are often adjectives: "a failed run").
PRIVATIVE = frozenset("""
fail fails failed failing refuse refuses refused refusing decline declines declined declining deny denies denied
lack lacks lacked lacking disable disables disabled disabling deprecate deprecates deprecated drop drops dropped
dropping remove removes removed removing stop stops stopped stopping avoid avoids avoided avoiding unsupported
discontinue discontinued forbid forbids forbidden prohibit prohibited ban banned refrain refrains refrained
missing absent unavailable unused unset unnecessary unneeded untouched empty void absence disappear disappears
disappeared bypass bypasses bypassed skip skips skipped skipping omit omits
omitted ignore ignores ignored exclude excludes excluded
""".split())
# Words a negation reaches over to the word it negates: "not [be] needed", "never [ever really] called".
SCOPE_SKIP = frozenset("""
be being been ever really actually even yet still always any anything anyone anymore longer point time way
means use uses used using
""".split())
# Phrases that negate what they govern as much as "not" does (issue 23): "use X instead of Y" = "use X, not Y".
# Pairs (word, next word) and triples (previous, word, next); "without" is a NEGATOR, "avoid" and "refrain"
# PRIVATIVE. "prefer X over Y" negates Y too: "over" within a few words after one of PREFERENCE.
NEGATION_PHRASES = frozenset({("instead", "of"), ("rather", "than"), ("other", "than"), ("in", "place", "of"),
                              ("apart", "from")})
# Slots that say one negation in other words: "instead of X" / "rather than X" is no substitution (the polarity
# check compares what they negate).
NEGATION_SLOTS = frozenset({"instead of", "rather than", "in place of", "other than", "without", "not", "never",
                            "no", "avoid", "refrain from", "do not", "do n't", "disabled", "off", "turned off",
                            "switched off", "except", "except for", "apart from"})
PREFERENCE = frozenset("prefer prefers preferred preferring favor favors favour favours".split())
# Negators that do not negate here: "nothing but X" = "only X", "not only", "not just", "no doubt", "no matter".
NOT_NEGATING = frozenset({("nothing", "but"), ("not", "only"), ("not", "just"), ("no", "doubt"), ("no", "matter")})

NUMBER_WORDS = {
    "zero": 0, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
    "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16,
    "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50,
    "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90, "hundred": 100, "thousand": 1000,
    "dozen": 12, "half": 0.5, "once": 1, "twice": 2, "thrice": 3, "single": 1, "double": 2, "triple": 3,
    "first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7, "eighth": 8,
    "ninth": 9, "tenth": 10,
}
# "one", "first", "second", "single", "once" are too often not numbers ("one of", "at first", "5 seconds");
# they only count when the other text writes the same quantity.
SOFT_NUMBER_WORDS = frozenset({"one", "first", "second", "single", "once", "double", "half"})

UNITS = {  # surface form -> canonical unit
    **dict.fromkeys(["ns", "nanosecond", "nanoseconds"], "ns"),
    **dict.fromkeys(["us", "µs", "microsecond", "microseconds"], "us"),
    **dict.fromkeys(["ms", "msec", "msecs", "millisecond", "milliseconds"], "ms"),
    **dict.fromkeys(["s", "sec", "secs", "second", "seconds"], "second"),
    **dict.fromkeys(["m", "min", "mins", "minute", "minutes"], "minute"),
    **dict.fromkeys(["h", "hr", "hrs", "hour", "hours"], "hour"),
    **dict.fromkeys(["d", "day", "days"], "day"),
    **dict.fromkeys(["wk", "week", "weeks"], "week"),
    **dict.fromkeys(["mo", "month", "months"], "month"),
    **dict.fromkeys(["y", "yr", "yrs", "year", "years"], "year"),
    **dict.fromkeys(["b", "byte", "bytes"], "byte"),
    **dict.fromkeys(["kb", "kib", "kilobyte", "kilobytes", "k"], "kb"),
    **dict.fromkeys(["mb", "mib", "megabyte", "megabytes"], "mb"),
    **dict.fromkeys(["gb", "gib", "gigabyte", "gigabytes"], "gb"),
    **dict.fromkeys(["tb", "tib", "terabyte", "terabytes"], "tb"),
    **dict.fromkeys(["%", "percent", "pct", "per-cent"], "percent"),
    **dict.fromkeys(["million", "mln", "mn"], "million"),
    **dict.fromkeys(["billion", "bn", "bln"], "billion"),
    **dict.fromkeys(["trillion", "tn"], "trillion"),
    **dict.fromkeys(["cent", "cents"], "cent"),
    **dict.fromkeys(["$", "dollar", "dollars", "usd"], "dollar"),
    **dict.fromkeys(["€", "euro", "euros", "eur"], "euro"),
    **dict.fromkeys(["£", "pound", "pounds", "gbp"], "pound"),
    **dict.fromkeys(["x", "times"], "times"),
    **dict.fromkeys(["px", "pixel", "pixels"], "px"),
    **dict.fromkeys(["row", "rows"], "row"),
    **dict.fromkeys(["thread", "threads"], "thread"),
    **dict.fromkeys(["worker", "workers"], "worker"),
    **dict.fromkeys(["retry", "retries", "attempt", "attempts"], "retry"),
    **dict.fromkeys(["connection", "connections"], "connection"),
    **dict.fromkeys(["request", "requests", "req"], "request"),
    **dict.fromkeys(["mile", "miles", "mi"], "mile"),
    **dict.fromkeys(["km", "kilometer", "kilometers", "kilometre", "kilometres"], "km"),
    **dict.fromkeys(["point", "points", "pt", "pts"], "point"),
    **dict.fromkeys(["share", "shares"], "share"),
}
# Units of time and size: another one named, with or without a number, is another fact ("per minute" / "per hour").
SCALE_UNITS = frozenset({"ns", "us", "ms", "second", "minute", "hour", "day", "week", "month", "year", "byte", "kb",
                         "mb", "gb", "tb"})

MONTHS = {m: i for i, ms in enumerate([
    ("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",), ("june", "jun"),
    ("july", "jul"), ("august", "aug"), ("september", "sep", "sept"), ("october", "oct"),
    ("november", "nov"), ("december", "dec")], start=1) for m in ms}
WEEKDAYS = {d: i for i, ds in enumerate([
    ("monday", "mon"), ("tuesday", "tue", "tues"), ("wednesday", "wed"), ("thursday", "thu", "thur", "thurs"),
    ("friday", "fri"), ("saturday", "sat"), ("sunday", "sun")]) for d in ds}

# Opposite pairs: one side in a text and only the other side in the other text is a polarity change. The model
# scores antonyms as similar words (cheap/expensive 0.80, frontend/backend 0.81), so they are listed.
OPPOSITES = [
    ("always", "never"), ("enable", "disable"), ("enabled", "disabled"), ("allow", "deny"), ("allow", "forbid"),
    ("allow", "block"), ("allowed", "forbidden"), ("accept", "reject"), ("include", "exclude"),
    ("add", "remove"), ("added", "removed"), ("true", "false"), ("on", "off"), ("before", "after"), ("before", "once"),
    ("increase", "decrease"), ("increased", "decreased"), ("raise", "lower"), ("rose", "fell"),
    ("up", "down"), ("gain", "loss"), ("gained", "lost"), ("higher", "lower"), ("more", "less"),
    ("more", "fewer"), ("above", "below"), ("minimum", "maximum"), ("min", "max"), ("sync", "async"),
    ("synchronous", "asynchronous"), ("public", "private"), ("required", "optional"), ("mandatory", "optional"),
    ("success", "failure"), ("succeeded", "failed"), ("pass", "fail"), ("passed", "failed"),
    ("valid", "invalid"), ("supported", "unsupported"), ("safe", "unsafe"), ("start", "stop"),
    ("lock", "unlock"), ("encrypted", "unencrypted"), ("blocking", "non-blocking"), ("inside", "outside"),
    ("first", "last"), ("earliest", "latest"), ("oldest", "newest"), ("ascending", "descending"),
    ("asc", "desc"), ("read", "write"), ("input", "output"), ("server", "client"), ("upstream", "downstream"),
    ("import", "export"), ("upload", "download"), ("push", "pull"), ("open", "close"), ("opened", "closed"),
    ("win", "lose"), ("won", "lost"), ("buy", "sell"), ("bought", "sold"), ("positive", "negative"),
    ("strict", "lenient"), ("deprecated", "recommended"), ("prefer", "avoid"), ("keep", "drop"),
    ("left", "right"), ("north", "south"), ("east", "west"),
    # added with the synonym rule (issue #14): pairs the model rates as near-synonyms
    ("cheap", "expensive"), ("fast", "slow"), ("faster", "slower"), ("high", "low"), ("large", "small"),
    ("big", "small"), ("larger", "smaller"), ("long", "short"), ("early", "late"), ("new", "old"),
    ("hot", "cold"), ("good", "bad"), ("best", "worst"), ("better", "worse"), ("easy", "hard"),
    ("top", "bottom"), ("frontend", "backend"), ("primary", "secondary"),
    ("primary", "replica"), ("local", "remote"), ("internal", "external"), ("major", "minor"),
    ("begin", "end"), ("start", "end"), ("inbound", "outbound"), ("ingress", "egress"), ("dev", "prod"),
    ("development", "production"), ("staging", "production"), ("debug", "release"),
    ("man", "woman"), ("men", "women"), ("boy", "girl"), ("boys", "girls"), ("yesterday", "today"),
    ("today", "tomorrow"), ("yesterday", "tomorrow"), ("white", "black"),
    ("horizontal", "vertical"), ("lowercase", "uppercase"), ("optimistic", "pessimistic"),
    # issue 23: opposites common in code talk, written from general knowledge (not from any test project)
    ("hard", "soft"), ("copy", "move"), ("previous", "next"), ("prepend", "append"), ("lazy", "eager"),
    ("lazily", "eagerly"), ("inner", "outer"), ("mutable", "immutable"), ("relative", "absolute"),
    ("global", "local"), ("shallow", "deep"), ("explicit", "implicit"), ("manual", "automatic"),
    ("manually", "automatically"), ("static", "dynamic"), ("visible", "hidden"), ("show", "hide"),
    ("online", "offline"), ("connect", "disconnect"), ("attach", "detach"), ("mount", "unmount"),
    ("install", "uninstall"), ("encode", "decode"), ("encrypt", "decrypt"), ("serialize", "deserialize"),
    ("compress", "decompress"), ("grow", "shrink"), ("expand", "collapse"), ("parent", "child"),
    ("head", "tail"), ("leading", "trailing"), ("prefix", "suffix"), ("stateful", "stateless"),
    ("cached", "uncached"), ("sorted", "unsorted"), ("ordered", "unordered"), ("signed", "unsigned"),
    ("strong", "weak"), ("light", "dark"), ("sender", "recipient"), ("producer", "consumer"),
    ("leader", "follower"), ("source", "destination"), ("request", "response"), ("send", "receive"),
    ("sent", "received"), ("incoming", "outgoing"), ("ceil", "floor"), ("upper", "lower"), ("most", "least"),
    ("active", "inactive"), ("grant", "revoke"), ("allowlist", "denylist"), ("whitelist", "blacklist"),
    ("subscribe", "unsubscribe"), ("login", "logout"), ("commit", "rollback"), ("forward", "backward"),
    ("increment", "decrement"), ("insert", "delete"), ("create", "delete"), ("create", "destroy"),
    ("keep", "discard"), ("temporary", "permanent"), ("transient", "persistent"), ("serial", "parallel"),
    ("sequential", "parallel"), ("sequentially", "concurrently"), ("same", "different"),
    ("identical", "different"), ("exact", "partial"), ("full", "partial"), ("full", "incremental"),
    ("older", "newer"), ("earlier", "later"), ("front", "back"), ("foreground", "background"),
    ("inclusive", "exclusive"), ("lowest", "highest"), ("smallest", "largest"), ("shortest", "longest"),
    ("overwrite", "preserve"), ("succeed", "fail"), ("passes", "fails"), ("works", "breaks"),
    ("fresh", "stale"), ("fresh", "reused"), ("new", "existing"), ("always", "sometimes"), ("dev", "production"),
    ("truncated", "full"), ("raise", "reduce"), ("raised", "reduced"), ("increase", "reduce"),
    ("increased", "reduced"), ("lazy", "immediate"), ("separate", "same"), ("separate", "shared"), ("pre", "post"),
    ("own", "shared"), ("isolated", "shared"),
]

# ---------------------------------------------------------------- word order (who did what to whom)

# Prepositions: the role a noun phrase plays ("from X to Y"). A phrase that starts with one carries its role
# when it moves; a bare phrase that trades its preposition for another one present in both texts changed role.
PREPOSITIONS = frozenset("""
from to into onto by with for of in on at over under via against between toward towards than after before since
until through during without within across behind beyond above below instead
""".split())
# Words a movable unit starts with: prepositions, subordinators, conjunctions, relative pronouns, punctuation.
# "In 1876, he moved ..." / "he moved ... in 1876" keeps its meaning; "Sullivan defeated Denny" moves bare names.
MARKERS = PREPOSITIONS | frozenset("""
when while where after before since because although though if unless until as whereas and or but nor that
which who whose whom so then also , ; : ( )
""".split())
# Words that may stand anywhere in a clause (time and place adverbs; words in -ly count too).
MOVABLE = frozenset("""
yesterday today tomorrow tonight now later soon earlier recently currently already still again also then
meanwhile however overseas abroad here there instead together alone anyway
""".split())
# Time phrases move freely too ("Kerry last month outlined" / "Kerry outlined last month"); a modifier alone
# ("the last line") is not one.
TIME = frozenset("""
day days week weeks month months year years decade morning afternoon evening night weekend
second seconds minute minutes hour hours daily hourly weekly nightly
""".split())
TIME_MODIFIERS = frozenset("last next past coming this earlier later every each".split())
# Attribution: "X said Y" / "Y, X said" is one statement.
REPORTING = frozenset("said says say told tells added according reported stated wrote".split())
# List separators: "A, B and C" / "C, B and A" lists the same things.
SEPARATORS = frozenset({",", ";", "and", "or", "nor", "&", "/", "plus", "vs", "versus"})
LINKS = frozenset({"and", "or", "but", "nor"})
# Words that lead a clause of their own: "when X, Y" / "Y when X" (a clause moved, guard_clauses).
SUBORDINATORS = frozenset("because since so when if unless while although though whereas".split())
ARTICLES = frozenset({"the", "a", "an"})
# A verb moved behind a be-form of its own is the passive voice: "we pinned numpy" / "numpy is pinned".
BE = frozenset("is are was were be been being".split())
PUNCTUATION = frozenset(",;:()[]")
BOUNDARY = frozenset(",;:().!?")
