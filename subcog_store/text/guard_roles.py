"""Who did what to whom, and which came first: the changed-fact guard's word-order rules (docs/guard.md).

The two texts are aligned into blocks of the same words; a unit that trades places with another around words
that stay ("Sullivan [defeated] Denny" / "Denny [defeated] Sullivan"), two bare units in the other order, or a
unit after another preposition ("from X to Y" / "to X from Y") is a changed fact. Moving a unit that carries its
own role, reordering a list or moving attribution is not.
"""
from __future__ import annotations

import re

from subcog_store.text.guard_clauses import active_voice, causes_traded, clauses_in_order
from subcog_store.text.guard_lists import list_items_swapped, options_sorted
from subcog_store.text.guard_tokens import (
    NUM, SAME, GuardVerdict, compared_form, is_content, names, order_tokens, stem)
from subcog_store.text.guard_words import (
    ARTICLES, BE, BOUNDARY, LINKS, MARKERS, MONTHS, MOVABLE, PREPOSITIONS, PUNCTUATION, REPORTING, SEPARATORS, TIME,
    TIME_MODIFIERS, WEEKDAYS)

__all__ = ["order_check", "MODIFIER_WORDS", "HEAD_WORDS", "MAX_ANCHORS", "LIST_SWAPS"]

MODIFIER_WORDS = 0  # neighbouring units trade places freely when one has at most this many content words (a
HEAD_WORDS = 0      # modifier) and the other at most HEAD_WORDS (its head); 0: never (PAWS dev, docs/guard.md)
MAX_ANCHORS = 150   # pairs of equal content words the word-order alignment reads at most (a sentence pair: dozens)
LIST_SWAPS = 3      # list items put back in order: this many trades of two items at most (a list of four)
Block = tuple[int, int, int, int]  # start in a, start in b, end in a, end in b

def _blocks(a: tuple[str, ...], b: tuple[str, ...]) -> list[Block]:
    """Align the two texts into blocks of the same words (greedy string tiling, longest first).

    A match that stops at a difference gives its trailing function words to what follows ("born in | Boston"),
    so that "in Boston" and "in 1923" are units that can trade places. Function words left over are paired by
    occurrence; blocks that follow each other in both texts are joined.
    """
    content_a = [is_content(t) for t in a]
    ka = [stem(t) if c else t for t, c in zip(a, content_a)]
    kb = [stem(t) if is_content(t) else t for t in b]
    counted = [0]   # content words of a before each position
    for c in content_a:
        counted.append(counted[-1] + c)
    n, m = len(a), len(b)
    used_a, used_b = [False] * n, [False] * m
    where: dict[str, list[int]] = {}
    for j, k in enumerate(kb):
        where.setdefault(k, []).append(j)
    tiles: list[tuple[int, int, int]] = []
    anchors = [(i, j) for i in range(n) if content_a[i] for j in where.get(ka[i], ())]
    if len(anchors) > MAX_ANCHORS:
        return []   # a few words said over and over: no order to read, and the cost would grow fast
    while anchors:
        best: tuple[tuple[int, float], int, int, int] | None = None
        for i0, j0 in anchors:  # every run of equal words through a pair of equal content words
            i, j = i0, j0
            while i and j and not used_a[i - 1] and not used_b[j - 1] and ka[i - 1] == kb[j - 1]:
                i, j = i - 1, j - 1
            end = i0 + 1
            while (end < n and end - i + j < m and not used_a[end] and not used_b[end - i + j]
                   and ka[end] == kb[end - i + j]):
                end += 1
            length = end - i
            if end < n and end - i + j < m:
                while not content_a[i + length - 1] and a[i + length - 1] not in PUNCTUATION:
                    length -= 1  # stops at a content word at the latest: the anchor
            score = (length + counted[i + length] - counted[i], -abs(i / n - j / m))
            if best is None or score > best[0]:
                best = (score, i, j, length)
        assert best is not None
        _, i, j, length = best
        for d in range(length):
            used_a[i + d] = used_b[j + d] = True
        tiles.append((i, j, length))
        anchors = [(i, j) for i, j in anchors if not used_a[i] and not used_b[j]]
    spare: dict[str, list[int]] = {}
    for j in range(m):
        if not used_b[j]:
            spare.setdefault(kb[j], []).append(j)
    for i in range(n):
        if not used_a[i] and spare.get(ka[i]):
            j = spare[ka[i]].pop(0)
            used_a[i] = used_b[j] = True
            tiles.append((i, j, 1))
    tiles.sort()
    blocks: list[Block] = []
    for i, j, length in tiles:
        if blocks and _gap(a, used_a, blocks[-1][2], i) and _gap(b, used_b, blocks[-1][3], j):
            blocks[-1] = (blocks[-1][0], blocks[-1][1], i + length, j + length)
        else:
            blocks.append((i, j, i + length, j + length))
    return blocks


_KEY_VALUE_PAIR = re.compile(r"([^\W_][\w.-]*)=([^\W_][\w.-]*)")


def _key_values(*texts: str) -> set[frozenset[str]]:
    """The `key=value` pairs the texts write: `scope=session` and "session scope" say one thing."""
    return {frozenset(m.groups()) for text in texts for m in _KEY_VALUE_PAIR.finditer(compared_form(text))}


def _participle_after(seq: tuple[str, ...], start: int, end: int) -> bool:
    """The unit is one participle (a content word in -ed) followed by a preposition other than "to" (an
    infinitive's "to" follows verbs too: "recruited Deane to join" / "Deane recruited to join"): the head of a
    reduced relative clause ("the directory shared between the workers"), which says what "the shared directory"
    says."""
    return (end == start + 1 and len(seq[start]) > 4 and seq[start].endswith("ed") and is_content(seq[start])
            and end < len(seq) and seq[end] in PREPOSITIONS and seq[end] != "to")


def _gap(seq: tuple[str, ...], aligned: list[bool], start: int, end: int) -> bool:
    """Nothing between start and end but unaligned articles."""
    return start <= end and all(not aligned[p] and seq[p] in ARTICLES for p in range(start, end))


def _self_contained(seq: tuple[str, ...], start: int, end: int) -> bool:
    """A unit that carries its own role wherever it stands: it starts with a preposition, conjunction or
    subordinator, is an adverb or a time word or attribution, or stands between punctuation (a clause, a list
    item)."""
    while start < end and (seq[start] in BOUNDARY or seq[start] in LINKS):
        start += 1
    while end > start and (seq[end - 1] in BOUNDARY or seq[end - 1] in LINKS):
        end -= 1
    if start == end or seq[start] in MARKERS:
        return True
    if _adverbial(seq[start:end]):
        return True
    before = seq[start - 1] if start else ","
    after = seq[end] if end < len(seq) else ","
    return (before in BOUNDARY or before in LINKS) and (after in BOUNDARY or after in LINKS)


def _adverbial(words: tuple[str, ...]) -> bool:
    """Only adverbs, time words or attribution: "last month", "on Saturday", "yesterday", "quickly"."""
    content = [t for t in words if is_content(t)]
    dated = any(t in MONTHS or t in WEEKDAYS or t in TIME for t in content)   # "on 5 May", "every 5 minutes"
    return any(t not in TIME_MODIFIERS for t in content) and all(
        t in MOVABLE or t in TIME or t in TIME_MODIFIERS or t in MONTHS or t in WEEKDAYS or t in REPORTING
        or t.endswith("ly") or (dated and NUM.match(t)) for t in content)


def _attribution(seq: tuple[str, ...], start: int, end: int) -> bool:
    """The block is, or stands next to, a reporting verb: "X said" / "said X"."""
    return any(t in REPORTING for t in seq[max(0, start - 1): end + 1])


def order_check(older: str, newer: str) -> GuardVerdict:
    """Who did what to whom, and which came first: "Sullivan defeated Denny" / "Denny defeated Sullivan",
    "from MySQL to Postgres" / "from Postgres to MySQL", "recorded in 2005 and published in 2006" / the years
    swapped. Moving a unit that carries its own role ("In 1876, he moved ..." / "He moved ... in 1876", "to
    New York from Chapel Hill" / "from Chapel Hill to New York"), reordering a list or moving attribution is not
    a change: neither are the items of a list, reworded or not, in another order ("PostgreSQL on port 5432 and
    Redis on port 6380" / "Redis (port 6380) and PostgreSQL (port 5432)"), when the texts read the same once
    the newer one's items are put back in the older one's order."""
    a, b = order_tokens(options_sorted(older)), order_tokens(options_sorted(newer))
    name_words, key_values = names(older) | names(newer), _key_values(older, newer)
    verdict = _order_verdict(a, b, name_words, key_values)
    # one text in the passive voice ("X is called by Y"), the other without "by": read it in the active one
    active = (active_voice(a), b) if "by" not in b else (a, active_voice(b)) if "by" not in a else ((), ())
    if verdict and all(active) and not _order_verdict(*active, name_words, key_values):
        return SAME
    if not verdict and causes_traded(a, b, name_words):
        return GuardVerdict(True, "order", "which comes first: the other clause")   # "X, so Y" / "X because Y"
    if not verdict or "respectively" in a or "respectively" in b:
        return verdict   # "A and B run on 1 and 2, respectively": the items' order is the fact
    moved = clauses_in_order(a, b, name_words)
    if moved and not _order_verdict(a, moved, name_words, key_values):
        return SAME      # a clause moved: "X when Y" / "when Y, X", "X; Y" / "Y: X"
    for _ in range(LIST_SWAPS):
        swapped = list_items_swapped(a, b, name_words)
        if swapped is None:
            break
        b = swapped
        if not _order_verdict(a, b, name_words, key_values):
            return SAME
    return verdict


def _order_verdict(a: tuple[str, ...], b: tuple[str, ...], name_words: frozenset[str],
                   key_values: set[frozenset[str]]) -> GuardVerdict:
    """order_check on the two texts' order tokens."""
    blocks = _blocks(a, b)
    k = len(blocks)
    if k < 2:
        return SAME
    rank_b = [0] * k
    for r, x in enumerate(sorted(range(k), key=lambda x: blocks[x][1])):
        rank_b[x] = r
    if rank_b == list(range(k)):
        return role_check(a, b, blocks)
    aligned_a, aligned_b = [False] * len(a), [False] * len(b)
    for sa, sb, ea, eb in blocks:
        aligned_a[sa:ea] = [True] * (ea - sa)
        aligned_b[sb:eb] = [True] * (eb - sb)
    words = [a[sa:ea] for sa, _, ea, _ in blocks]
    content = [sum(map(is_content, w)) for w in words]

    order_b = sorted(range(k), key=rank_b.__getitem__)
    attribution = [any(t in REPORTING for t in w) for w in words]
    # the agent of a passive ("investigated by two agencies" / "two agencies investigate")
    agent = [(sa and not aligned_a[sa - 1] and a[sa - 1] == "by")
             or (sb and not aligned_b[sb - 1] and b[sb - 1] == "by") for sa, sb, _, _ in blocks]

    def neighbours(order: list[int], seq: tuple[str, ...], aligned: list[bool], side: int
                   ) -> tuple[dict[int, int], set[int], set[tuple[int, int]]]:
        """Block -> the block right after it in one text, when no content word of this text only stands between
        (nor a be-form or "by" of this text only: the passive voice); the blocks whose link to the next one is
        tight (nothing of this text only between but articles and punctuation); and the pairs side by side."""
        out, tight, beside = {}, set(), set()
        for u, v in zip(order, order[1:]):
            end, start = blocks[u][side + 2], blocks[v][side]
            loose = [t for i, t in enumerate(seq[end:start]) if not aligned[end + i]]
            if not any(map(is_content, loose)):
                beside.update({(u, v), (v, u)})
                if not any(t in BE or t == "by" for t in loose):
                    out[u] = v
                    if all(t in ARTICLES or t in BOUNDARY for t in loose):
                        tight.add(u)
        return out, tight, beside

    (next_a, tight_a, beside_a), (next_b, tight_b, beside_b) = neighbours(list(range(k)), a, aligned_a, 0), \
        neighbours(order_b, b, aligned_b, 1)
    prev_a, prev_b = {v: u for u, v in next_a.items()}, {v: u for u, v in next_b.items()}

    def listed(seq: tuple[str, ...], x: tuple[int, int], y: tuple[int, int]) -> bool:
        """Between the end of x and the start of y only separators, articles and other list items: "A, B and C"."""
        if not (x[1] < y[0] and seq[x[1]] in SEPARATORS and seq[y[0] - 1] in SEPARATORS):
            return False
        p = x[1]
        while p < y[0]:
            if seq[p] in SEPARATORS or seq[p] in ARTICLES:
                p += 1
                continue
            q = p
            while q < y[0] and seq[q] not in SEPARATORS:
                q += 1
            if seq[q - 1] in PREPOSITIONS or seq[p] in MARKERS:
                return False  # "and died in": a clause, not an item
            p = q
        return True

    # a unit led by a preposition or subordinator that opens one of the texts ("For the billing service we
    # chose ..." / "We chose ... for the billing service"): its trades are loose evidence only
    fronted = [words[x][0] in MARKERS and words[x][0] not in SEPARATORS and 0 in (sa, sb)
               for x, (sa, sb, _, _) in enumerate(blocks)]

    def traded(x: int | None, y: int | None) -> bool:
        """x and y are different units with content that swapped order, not simply with each other, nor as items
        of one list, nor as the agent of a passive."""
        if (x is None or y is None or x == y or not content[x] or not content[y] or attribution[x] or attribution[y]
                or agent[x] or agent[y] or (x < y) == (rank_b[x] < rank_b[y])):
            return False
        if (x, y) in beside_a and (x, y) in beside_b:
            return False
        u, v = min(x, y), max(x, y)
        return not (listed(a, (blocks[u][0], blocks[u][2]), (blocks[v][0], blocks[v][2]))
                    and listed(b, (blocks[v][1], blocks[v][3]), (blocks[u][1], blocks[u][3])))

    # 1. units hand their neighbours over: "Sullivan [defeated] Denny" / "Denny [defeated] Sullivan", "[born in]
    #    Brooklyn ... [died in] Tiburon" / swapped. A tight link (same words at the junction in both texts) or
    #    two named units trading places is evidence enough; a loose one (a rewording at the junction, or a
    #    phrase moved to the front) needs a second one for the same two units;
    #    a pivot of function words only ("from X [to] Y") counts when it trades on both of its sides.
    seen: dict[tuple[int, int], list[str]] = {}
    for c in range(k):
        if attribution[c] or (not content[c] and not any(t in PREPOSITIONS or t in "()" for t in words[c])):
            continue
        if words[c][0] in SEPARATORS and words[c][-1] in SEPARATORS:
            continue  # ", B and": the other items of a list
        trades = [(x, y, side) for x, y, side in ((prev_a.get(c), prev_b.get(c), 0), (next_a.get(c), next_b.get(c), 1))
                  if traded(x, y)]
        if not content[c] and len(trades) < 2:
            continue
        for x, y, side in trades:
            pair = (min(x, y), max(x, y))
            near = " ".join(words[c][:3] if side == 0 else words[c][-3:])
            wx, wy = (" ".join(words[x][-4:]), " ".join(words[y][-4:])) if side == 0 else \
                (" ".join(words[x][:4]), " ".join(words[y][:4]))
            seen.setdefault(pair, []).append(f"{wx} {near} vs {wy} {near}" if side == 0 else
                                             f"{near} {wx} vs {near} {wy}")
            tight = (x in tight_a and y in tight_b) if side == 0 else (c in tight_a and c in tight_b)
            named = bool(name_words.intersection(words[x])) and bool(name_words.intersection(words[y]))
            if (tight or named) and content[c] and not fronted[x] and not fronted[y]:
                seen[pair].append("")
            if len(seen[pair]) >= 2:
                return GuardVerdict(True, "participants", seen[pair][0])
    # 2. two bare units in the other order, among words that are the same in both texts: "Nine episodes ordered
    #    were broadcast" / "Nine broadcast episodes were ordered". Not when one of them carries its own role
    #    (a phrase led by a preposition, an adverbial, attribution, a passive verb), when the two are items of
    #    one list, nor across a rewording.
    free = [_self_contained(a, sa, ea) or _self_contained(b, sb, eb) or _attribution(a, sa, ea)
            or _attribution(b, sb, eb)
            or (sa and not aligned_a[sa - 1] and a[sa - 1] in BE) or (sb and not aligned_b[sb - 1] and b[sb - 1] in BE)
            for sa, sb, ea, eb in blocks]

    def reworded(seq: tuple[str, ...], aligned: list[bool], start: int, end: int) -> bool:
        return any(not aligned[p] and seq[p] not in ARTICLES and seq[p] not in BOUNDARY for p in range(start, end))

    def modifier_moved(x: int, y: int) -> bool:
        """x before y in the older text, y before x in the newer, next to each other in both: the two words of
        a `key=value` ("scope=session" / "session scope"), or a participle that moved behind its noun and took a
        preposition after it, an article before both ("the shared directory" / "the directory shared between")"""
        if y != x + 1 or rank_b[x] != rank_b[y] + 1:
            return False
        if frozenset((" ".join(words[x]), " ".join(words[y]))) in key_values:
            return True
        (sa, sb, ea, eb), (ya, yb, za, zb) = blocks[x], blocks[y]
        if ea != ya or zb != sb or not (sa and yb and a[sa - 1] in ARTICLES and b[yb - 1] in ARTICLES):
            return False
        return (_participle_after(b, sb, eb) and content[y]) or (_participle_after(a, ya, za) and content[x])

    for x in range(k):
        if not content[x] or free[x]:
            continue
        for y in range(x + 1, k):
            if (rank_b[y] > rank_b[x] or not content[y] or free[y]
                    or (y == x + 1 and rank_b[x] == rank_b[y] + 1   # a modifier moved around its head
                        and min(content[x], content[y]) <= MODIFIER_WORDS and max(content[x], content[y]) <= HEAD_WORDS)
                    or modifier_moved(x, y)
                    or reworded(a, aligned_a, blocks[x][0], blocks[y][2])
                    or reworded(b, aligned_b, blocks[y][1], blocks[x][3])
                    or (listed(a, blocks[x][0:3:2], blocks[y][0:3:2])
                        and listed(b, blocks[y][1:4:2], blocks[x][1:4:2]))):
                continue
            return GuardVerdict(True, "order", f"{' '.join(words[x])} / {' '.join(words[y])} in the other order")
    return role_check(a, b, blocks)


def role_check(a: tuple[str, ...], b: tuple[str, ...], blocks: list[Block]) -> GuardVerdict:
    """3. a bare unit after another preposition, both prepositions being in both texts: "from X to Y" /
    "to X from Y"."""
    aligned_a, aligned_b = [False] * len(a), [False] * len(b)
    for sa, sb, ea, eb in blocks:
        aligned_a[sa:ea] = [True] * (ea - sa)
        aligned_b[sb:eb] = [True] * (eb - sb)

    def governor(seq: tuple[str, ...], aligned: list[bool], p: int) -> str | None:
        p -= 1
        while p >= 0 and seq[p] in ARTICLES:
            p -= 1
        return seq[p] if p >= 0 and aligned[p] and seq[p] in PREPOSITIONS else None

    for sa, sb, _, _ in blocks:
        if is_content(a[sa]):
            ga, gb = governor(a, aligned_a, sa), governor(b, aligned_b, sb)
            if ga and gb and ga != gb:
                return GuardVerdict(True, "participants", f"{ga} {a[sa]} vs {gb} {a[sa]}")
    return SAME
