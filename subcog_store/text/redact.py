"""Replace secrets in text with `[REDACTED]` before it is stored.

Rules run in order; each replaces one span per secret: a whole token (`ghp_...`, a PEM block, a webhook URL) or
only the value (`key=VALUE`, `scheme://user:VALUE@host`, "the password is VALUE"). A `[REDACTED]` already in the
text is never swallowed or counted, and placeholder-looking values (`xxxx`, `<token>`, `${VAR}`, `your-key-here`,
code such as `os.environ[...]`) are left, so the count is the number of markers added and redacting twice
changes nothing.

Speed, and no catastrophic backtracking: patterns start with a literal, so the regex engine skips ahead to
candidates; vendor prefixes are searched only inside runs of token characters; open-ended bodies are possessive
and the others bounded, so no start rescans a long run. Case-insensitive rules run case-sensitive patterns over a
lower-cased copy of the text (same length, same positions); their checks read the original.
"""
from __future__ import annotations

import base64
import binascii
import math
import re
from collections import Counter
from typing import Callable, Iterator, NamedTuple

from subcog_store.text.lazy_regex import LazyPattern

__all__ = ["REDACTED", "redact"]

REDACTED = "[REDACTED]"

Span = tuple[int, int]
Picker = Callable[[re.Match, str], "Span | None"]


class _Within:
    """Matches of `inner` inside the runs `outer` finds: a pre-filter for a pattern of many alternatives."""

    def __init__(self, outer: str, inner: LazyPattern):
        self.outer, self.inner, self.pattern = LazyPattern(outer), inner, inner.pattern

    def finditer(self, text: str) -> Iterator[re.Match]:
        for run in self.outer.finditer(text):
            yield from self.inner.finditer(text, run.start(), run.end())


class _Rule(NamedTuple):
    rx: LazyPattern | _Within
    pick: Picker  # (match, original text) -> the span to replace, or None to keep the match
    folded: bool = False  # rx runs over the lower-cased text
    needs: tuple[str, ...] = ()  # every match holds one of these: a text holding none is not searched (nor the
    #                              pattern compiled: `text/lazy_regex.py`); tests/test_redact.py checks each list


def _words(*words: str, not_after: str = r"[\w-]") -> str:
    """Alternatives (no group) of literal words, each not preceded by a `not_after` character ('' for any).

    Every alternative starts with a literal, so the regex engine can skip ahead to candidate positions.
    """
    if not not_after:
        return "|".join(map(re.escape, words))
    return "|".join(f"{re.escape(w)}(?<!{not_after}{re.escape(w)})" for w in words)


_PRIVATE_KEY = LazyPattern(
    r"----(?:- ?| )BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)? ?-{4,5}.*?"
    r"(?:----(?:- ?| )END [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)? ?-{4,5}|\Z)", re.S
)
_PUTTY = LazyPattern(r"PuTTY-User-Key-File-\d+:.*?(?:Private-MAC:[ \t]*[0-9a-fA-F]*|\Z)", re.S)
_WEBHOOK = LazyPattern(
    r"https?://(?:hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_-]{20,300}"
    r"|(?:(?:ptb|canary)\.)?discord(?:app)?\.com/api/webhooks/\d{5,30}/[A-Za-z0-9_-]{20,200}"
    r"|[\w-]{1,100}\.webhook\.office\.com/webhookb2/[^\s\"'<>)]{20,400}"
    r"|outlook\.office(?:365)?\.com/webhook/[^\s\"'<>)]{20,400}"
    r"|hooks\.zapier\.com/hooks/catch/\d{3,20}/[A-Za-z0-9]{4,40}/?)"
)
_URL_PASSWORD = LazyPattern(r"://[^\s:/@\"'<>]{0,200}:([^\s@/\"'<>]{1,300})@")  # scheme://user:PASSWORD@host
_URL_USER_TOKEN = LazyPattern(r"://([A-Za-z0-9_.~%-]{16,200})@")  # Sentry DSNs, tokens used as the user name
_CONN_FIELD = LazyPattern(
    r"(?:accountkey|sharedaccesskey|sharedaccesssignature|sharedsecretvalue|clientsecret)[ \t]*=[ \t]*"
    r"([^;\s\"'<>]{8,1000}+)"
)
_QUERY_PARAM = LazyPattern(
    r"[?&;](?:sig|signature|x-amz-signature|x-amz-security-token|x-goog-signature|access_token|refresh_token"
    r"|id_token|client_secret|api_key|apikey|api-key|key|token|secret|password|passwd|pwd|auth)"
    r"=([^&?;\s#\"'<>]{8,1000}+)"
)
_JWT = LazyPattern(r"eyJ(?<![A-Za-z0-9_-]eyJ)[A-Za-z0-9_-]{8,}+\.eyJ[A-Za-z0-9_-]{8,}+\.[A-Za-z0-9_-]*+")
_AUTH_HEADER = LazyPattern(
    r"(?:authorization(?<![\w-]authorization)[ \t]*:[ \t]*(?:basic|bearer|token|ssws|digest|apikey)[ \t]+"
    r"|bearer(?<![\w-]bearer)[ \t]+|ssws(?<![\w-]ssws)[ \t]+)([a-z0-9._~+/-]{11,}[a-z0-9_~+/-]=*)"
)
_VENDOR = LazyPattern(  # searched inside runs of token characters only (see _Within)
    r"(?<![A-Za-z0-9_.+-])(?:(?:"
    # fixed-length formats: they must not run on into more token characters
    r"(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA|ABIA|ACCA)[A-Z0-9]{16}|LTAI[A-Za-z0-9]{12,20}"  # AWS, Alibaba
    r"|AIza[0-9A-Za-z_-]{35}|SG\.[A-Za-z0-9_-]{16,32}\.[A-Za-z0-9_-]{30,64}"  # Google API key, SendGrid
    r"|npm_[A-Za-z0-9]{36}|rubygems_[a-f0-9]{48}|CLOJARS_[a-f0-9]{60}|r8_[A-Za-z0-9]{37}"  # registries, Replicate
    r"|lsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10}|SK[0-9a-fA-F]{32}|key-[0-9a-zA-Z]{32}"  # LangSmith, Twilio, Mailgun
    r"|xkeysib-[a-f0-9]{64}-[A-Za-z0-9]{16}|re_[A-Za-z0-9]{8}_[A-Za-z0-9]{24}"  # Brevo, Resend
    r"|shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}|do[opr]_v1_[a-f0-9]{64}"  # Shopify, DigitalOcean
    r"|lin_(?:api|oauth)_[A-Za-z0-9]{40}|secret_[A-Za-z0-9]{43}|AGE-SECRET-KEY-1[0-9A-Z]{58}"  # Linear, Notion, age
    r"|PMAK-[0-9a-f]{24}-[0-9a-f]{34}|glsa_[A-Za-z0-9]{32}_[0-9a-f]{8}|sbp_[0-9a-f]{40}"  # Postman, Grafana, Supabase
    r"|dapi[0-9a-f]{32}(?:-\d)?|pul-[0-9a-f]{40}|bkua_[a-f0-9]{40}|nfp_[A-Za-z0-9]{36}"  # Databricks, Pulumi, ...
    r"|NR(?:AK|JS|II)-[A-Za-z0-9]{19,27}|dt0c01\.[A-Z0-9]{24}\.[A-Z0-9]{64}"  # New Relic, Dynatrace
    r"|CFPAT-[A-Za-z0-9_-]{43}|rnd_[A-Za-z0-9]{32}|shippo_(?:live|test)_[a-f0-9]{40}"  # Contentful, Render, Shippo
    r"|pat[A-Za-z0-9]{14}\.[a-f0-9]{64}"  # Airtable
    r"|[MNO][A-Za-z0-9_-]{23,27}\.[A-Za-z0-9_-]{6,7}\.[A-Za-z0-9_-]{27,40}"  # Discord bot token
    r"|(?:bot)?\d{8,10}:AA[A-Za-z0-9_-]{33}"  # Telegram bot token
    r"|[A-Za-z0-9_~.-]{3}\dQ~[A-Za-z0-9_~.-]{31,34}"  # Azure AD client secret
    r")(?![A-Za-z0-9_~-])"
    # open-ended formats: the body takes the whole run (possessive), so a long run is scanned once
    r"|gh[pousr]_[A-Za-z0-9]{20,}+|github_pat_[A-Za-z0-9_]{20,}+"  # GitHub
    r"|gl(?:pat|dt|rt|cbt|ptt|ft|imt|agent|oas|soat|ffct|wt)-[A-Za-z0-9_.-]{20,}+"  # GitLab
    r"|GR1348941[A-Za-z0-9_-]{20,}+"
    r"|xox[abeoprs]-[A-Za-z0-9-]{10,}+|xoxe\.xox[bp]-\d-[A-Za-z0-9-]{20,}+|xapp-\d-[A-Za-z0-9-]{20,}+"  # Slack
    r"|sk-(?:ant-|proj-|svcacct-|admin-|or-)?[A-Za-z0-9_-]{20,}+"  # OpenAI, Anthropic, OpenRouter
    r"|[sr]k_(?:live|test)_[A-Za-z0-9]{16,}+|whsec_[A-Za-z0-9]{24,}+"  # Stripe
    r"|GOCSPX-[A-Za-z0-9_-]{24,}+|ya29\.[A-Za-z0-9_-]{20,}+|1//0[A-Za-z0-9_-]{40,}+"  # Google OAuth
    r"|pypi-AgE[A-Za-z0-9_-]{50,}+|dckr_pat_[A-Za-z0-9_-]{20,}+|AKCp[A-Za-z0-9]{60,}+"  # PyPI, Docker Hub, JFrog
    r"|cmVmdGtuOjAxOj[A-Za-z0-9]{30,}+|hf_[A-Za-z0-9]{30,}+|api_org_[A-Za-z0-9]{30,}+"  # JFrog, Hugging Face
    r"|gsk_[A-Za-z0-9]{48,}+|pplx-[A-Za-z0-9]{40,}+|xai-[A-Za-z0-9]{60,}+|HRKU-[A-Za-z0-9_-]{20,}+"  # AI, Heroku
    r"|hv[sbr]\.[A-Za-z0-9_-]{24,}+|dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,}+"  # Vault, Doppler
    r"|ntn_[A-Za-z0-9]{40,}+|AT(?:ATT|CTT)3[A-Za-z0-9_=-]{50,}+|ATBB[A-Za-z0-9]{28,}+"  # Notion, Atlassian
    r"|sntry[su]_[A-Za-z0-9+/=_]{40,}+|sq0(?:atp|csp)-[A-Za-z0-9_-]{22,}+"  # Sentry, Square
    r"|EAA[A-Za-z0-9_-]{60,}+"  # Meta
    r"|pscale_(?:tkn|pw|oauth)_[A-Za-z0-9_.-]{32,}+|glc_[A-Za-z0-9+/]{32,}+={0,2}"  # PlanetScale, Grafana
    r"|sb_secret_[A-Za-z0-9_-]{20,}+|figd_[A-Za-z0-9_-]{40,}+|fo1_[A-Za-z0-9_-]{40,}+"  # Supabase, Figma, Fly.io
    r"|fm[12][ar]?_[A-Za-z0-9+/=_-]{40,}+|tskey-[a-z]{0,8}-?[A-Za-z0-9]{6,}+-[A-Za-z0-9]{16,}+"  # Fly.io, Tailscale
    r"|sk\.eyJ[A-Za-z0-9_-]{20,}+\.[A-Za-z0-9_-]{20,}+"  # Mapbox
    r"|[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_-]{60,}+"  # Terraform Cloud
    r")"
)
_PASSWORD_HASH = LazyPattern(
    r"\$2[abxy]?\$\d\d\$[./A-Za-z0-9]{53}"  # bcrypt
    r"|\$[56]\$(?:rounds=\d{1,9}\$)?[./A-Za-z0-9]{1,16}\$[./A-Za-z0-9]{43,86}"  # sha256crypt, sha512crypt
    r"|\$argon2(?:id|i|d)\$v=\d+\$m=\d+,t=\d+,p=\d+\$[A-Za-z0-9+/]{8,}\$[A-Za-z0-9+/]{16,}"
)
_DOCKER_AUTH = LazyPattern(r"\"auth\"\s*:\s*\"([A-Za-z0-9+/]{8,2000}={0,2})\"")
_CLI_FLAG = LazyPattern(
    r"--(?<![\w-]--)(?:password|passwd|pass|token|api-key|apikey|secret|client-secret|auth-token|access-token)"
    r"(?![\w-])(?:=|[ \t]+)['\"]?([^\s'\"]{1,300})"
)
_CURL_USER = LazyPattern(
    r"curl(?<![\w-]curl)\b[^\n|;&]{0,300}?[ \t](?:-u|--user)[ \t]+['\"]?[^\s:'\"]{1,100}:([^\s'\"]{1,300})"
)
_MYSQL_P = LazyPattern(r"mysql(?<![\w-]mysql)(?:dump|admin)?\b[^\n|;&]{0,200}?[ \t]-p([^\s-][^\s'\"]{0,300})")
# host:port:db:user:PASSWORD (a numeric db is a line:column of compiler or linter output)
_PGPASS = LazyPattern(r":(?:\d{1,5}|\*):[\w*.-]{0,100}[A-Za-z*][\w*.-]{0,100}:[\w*.@-]{1,100}:(\S{1,300})")
# key = value, key: value, "key": "value" where the key ends in a secret word (not max_tokens, tokenizer).
_ASSIGN = LazyPattern(
    r"(?:" + _words("password", "passwd", "secret", "token", not_after="") + "|"
    + _words("passphrase", "pwd", "apikey", "api_key", "api-key", "accesskey", "access_key", "access-key",
             "secretkey", "secret_key", "secret-key", "privatekey", "private_key", "private-key", "credential",
             "credentials", "client-key-data", "client_key_data", not_after="[a-z0-9]")
    + r")(?:[_-](?:base|value|b64|base64|hex|raw))?(?![a-z0-9])[\"']?([ \t]*(?::=|:|=(?!=))[ \t]*)"
    r"(?:\"([^\"\n]{1,500})\"|'([^'\n]{1,500})'|([^\s\"',;)}\]]+))"
)
_PASSWORD_WORDS = ("password", "passwords", "passphrase", "passphrases", "passcode", "passcodes", "passwd", "pw",
                   "credential", "credentials")
# "the staging password is hunter2", "password for staging is X", "pw: X", "passphrase was X", "API key is X"
_PROSE = LazyPattern(
    "(?P<word>" + _words(*_PASSWORD_WORDS, "key", "keys", "token", "tokens", "secret", "secrets") + r")(?![\w-])"
    + r"""(?:[ \t]+(?:for|of|on)(?:[ \t]+[^\s.,;:!?]{1,40}){1,5}?)??
    (?:[ \t]+(?:(?:is|was|are|were)(?:[ \t]+(?:now|still|currently|actually|just))?
                 (?:[ \t]+(?:set|changed|reset|rotated|updated)[ \t]+to)?
               |(?:(?:has|have)[ \t]+been[ \t]+|got[ \t]+)?(?:set|changed|reset|rotated|updated)[ \t]+to)[ \t]+
       |[ \t]*(?::|=|->)[ \t]*)
    (?:"(?P<q1>[^"\n]{1,200})"|'(?P<q2>[^'\n]{1,200})'|`(?P<q3>[^`\n]{1,200})`|“(?P<q4>[^”\n]{1,200})”
       |(?P<v>[^\s"'`“]{1,200}))""", re.X
)
_KEY_QUALIFIER = LazyPattern(r"(?:api|access|secret|private|signing|encryption|master|deploy|license)[ _-]?\Z", re.I)
# "login admin password X" (.netrc), "connect with password X"
_PASSWORD_ARG = LazyPattern(
    "(?:" + _words("password", "passphrase", "passwd", "pw") + r")[ \t]+"
    r"(?:\"(?P<q1>[^\"\n]{1,200})\"|'(?P<q2>[^'\n]{1,200})'|`(?P<q3>[^`\n]{1,200})`|(?P<v>[^\s\"'`]{1,200}))"
)
_ARG_CONTEXT = LazyPattern(
    r"(?:\b(?:login|user(?:name)?)[ \t]+\S{1,100}|\b(?:with|using|use|enter|type)(?:[ \t]+(?:the|a))?)[ \t]+\Z", re.I
)
_NEAR_SECRET_WORD = LazyPattern(
    r"(?:" + _words("key", "secret", "token", "password", "passwd", "credential", "signature", "apikey", "api_key",
                    "api-key") + r")(?<!public key)s?\b[^\n]{0,40}?"
    r"(?<![a-z0-9+/_-])([a-f0-9]{32,}|[a-z0-9+/_-]{32,}={0,2})(?![a-z0-9+/_=-]|\[redacted\])"
)
_UNIT_AFTER = LazyPattern(
    r"\s*(?:\+\s*)?(?:characters?|chars?|digits?|letters?|bytes?|bits?|symbols?|words?|long|or\s+(?:more|longer)"
    r"|min(?:imum)?|max(?:imum)?|days?|hours?|minutes?|seconds?|times?|attempts?|tries|%|percent)\b", re.I
)
_PLACEHOLDER = LazyPattern(
    r"(?i)^(?:[a-z][a-z0-9+.-]*://.*|none|null|nil|true|false|undefined|\[redacted\]|\*+|x+|\.{3,}|…"
    r"|<[a-z_][\w .-]{0,60}>?|\$\{.*|\$[A-Za-z_]\w*|%[A-Za-z_]\w*%|%\([^)]{1,60}\)s|\{\{.{1,80}\}\}"
    r"|\{[A-Za-z_]\w*\}|your[-_ ].*|changeme|change[-_]me|replace[-_]?me|placeholder"
    r"|(?:[A-Za-z_$][\w$]*\??\.)*[A-Za-z_$][\w$]*(?:<[\w<>, .]*>)?\??\.?[(\[].*|[(\[{].*|\$\(.*"  # calls, code
    r"|(?:os|self|cls|this|settings|config|env|process|environ|req|request|res|response|ctx|context|props|state"
    r"|data|body|result|args|kwargs|opts|options|params)\??\..*|[a-z_$][\w$]*\?\..*"  # attributes
    r"|await|new|typeof|function|lambda|async|yield|u?int\d*|uint8array|string|number|boolean|bytes|str|any)$"
)
_UUID = LazyPattern(r"[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}")
_FINGERPRINT = LazyPattern(r"(?i)(?:sha\d*|md5)[:-]\Z")
_MAX_PASSES = 4
_NOT_SECRET_KEYS = {"pwd"}  # the working directory in an environment dump
_LEFTOVER = LazyPattern(r"\\[nrt]|[\s.,;:()\[\]{}<>\"'`]")  # what may sit next to a [REDACTED] without being a secret
_TRAILING = ".,;:)]}>"  # sentence punctuation after a value ("!" and "?" may end a password)


def _entropy(s: str) -> float:
    n = len(s)
    return -sum(c / n * math.log2(c / n) for c in Counter(s).values())


def _looks_random(s: str) -> bool:
    """High-entropy hex, or base64 with a digit and mixed classes (not an identifier like fooBar/bazQux)."""
    s = s.rstrip("=")
    if re.fullmatch(r"[A-Fa-f0-9]+", s):
        return _entropy(s) >= 3.0
    kinds = sum(bool(re.search(p, s)) for p in ("[a-z]", "[A-Z]", "[0-9]"))
    return kinds >= 2 and bool(re.search("[0-9]", s)) and _entropy(s) >= 3.5


def _tokenish(s: str) -> bool:
    """A credential rather than a word: has a digit or symbol, or is long."""
    return len(s) >= 24 or bool(re.search(r"[0-9_~+/=-]", s))


def _placeholder_like(s: str) -> bool:
    """Stand-ins such as 'SG.xxxxx.yyyyy', 'ghp_XXXXXXXXXXXX', 'sk-...', 'AKIA****'."""
    if not re.search(r"[xX*•]{4}|[yY]{4}|\.{3}|…", s):
        return False
    return sum(c in "xXyY*•.…_-" for c in s) * 5 >= len(s) * 3


def _not_placeholder(s: str) -> bool:
    return not _PLACEHOLDER.match(s)


def _at_word_start(s: str, i: int) -> bool:
    return i == 0 or not (s[i - 1].isalnum() or s[i - 1] == "_")


def _group(*groups: int, check: Callable[[str], bool] | None = None, word: bool = False) -> Picker:
    """The first matched of `groups` (0: the whole match) if `check` accepts its text (and, with `word`, the
    match starts a word)."""

    def pick(m: re.Match, s: str) -> Span | None:
        g = next((g for g in groups if m.group(g) is not None), None)
        if g is None or (word and not _at_word_start(s, m.start())):
            return None
        a, b = m.span(g)
        return (a, b) if check is None or check(s[a:b]) else None

    return pick


def _assign_value(m: re.Match, s: str) -> Span | None:
    """The value of a key=value match, or None to keep it (placeholders, code, prose after a colon, PWD=)."""
    a = m.start()
    while a > 0 and (s[a - 1].isalnum() or s[a - 1] in "_.-"):
        a -= 1
    key = s[a:m.start(1)].strip("\"' \t").lower()
    g = 2 if m.group(2) is not None else 3 if m.group(3) is not None else 4
    value = s[m.start(g):m.end(g)]
    if key in _NOT_SECRET_KEYS or _PLACEHOLDER.match(value):
        return None
    if g == 4 and "." in value and value.rsplit(".", 1)[1].lower() == key.rsplit(".", 1)[-1]:
        return None  # accessToken: result.accessToken is code
    if g == 4 and ":" in m.group(1) and not (len(value) >= 6 and re.search(r"[0-9\W_]", value)):
        return None  # "password: must be long" is prose
    return m.span(g)


def _prose_value(m: re.Match, s: str, password: bool, camel: bool = False) -> Span | None:
    """The stated secret of "the password is X", or None for ordinary prose ("is required", "is 12 chars").

    Unquoted, it needs a digit or symbol (or, with `camel`, two inner capitals: "CorrectHorseBattery"); an
    all-letter word ("is required", "is PgBouncer") is prose.
    """
    g = next((g for g in ("q1", "q2", "q3", "q4") if m.groupdict().get(g) is not None), None)
    if g is not None:
        a, b = m.span(g)
        value = s[a:b]
        return (a, b) if len(value.strip()) >= (3 if password else 8) and _not_placeholder(value) else None
    a, b = m.span("v")
    value = s[a:b].rstrip(_TRAILING)
    b = a + len(value)
    if len(value) < (4 if password else 8) or _PLACEHOLDER.match(value) or re.match(r"(?:/|~/|\.\.?/)", value):
        return None
    if _UNIT_AFTER.match(s, b) or (value.isdigit() and len(value) < 6):  # "password: 2024" is a year or a count
        return None
    if password:
        ok = _tokenish(value) or (camel and len(re.findall(r"[a-z][A-Z]", value)) >= 2)
    else:
        ok = bool(re.search(r"[0-9]", value) and re.search(r"[A-Za-z]", value)) and _tokenish(value)
    return (a, b) if ok else None


def _prose(m: re.Match, s: str) -> Span | None:
    word = m.group("word")  # lower case: the rule runs over the folded text
    if word.rstrip("s") == "key" and not _KEY_QUALIFIER.search(s, max(0, m.start() - 20), m.start()):
        return None  # "the key is X" is too vague; "the API key is X" is not
    return _prose_value(m, s, password=word in _PASSWORD_WORDS, camel=True)


def _password_arg(m: re.Match, s: str) -> Span | None:
    if not _ARG_CONTEXT.search(s, max(0, m.start() - 130), m.start()):
        return None
    return _prose_value(m, s, password=True)


def _docker_auth(m: re.Match, s: str) -> Span | None:
    """Docker config `"auth": "<base64 of user:password>"`."""
    try:
        decoded = base64.b64decode(m.group(1), validate=True)
    except (binascii.Error, ValueError):
        return None
    return m.span(1) if b":" in decoded else None


def _pgpass(m: re.Match, s: str) -> Span | None:
    """A .pgpass line: the host before the match is a name or '*', not part of a URL or a longer a:b:c chain."""
    a = m.start()
    while a > 0 and (s[a - 1].isalnum() or s[a - 1] in "_.-*"):
        a -= 1
    host = s[a:m.start()]
    if not re.fullmatch(r"[A-Za-z][\w.-]{0,100}|\*", host) or (a > 0 and s[a - 1] in ":/@"):
        return None
    return m.span(1) if _not_placeholder(m.group(1)) else None


def _near_secret(m: re.Match, s: str) -> Span | None:
    """A random-looking value; not a public key (ssh-ed25519 AAAAC3...), a fingerprint (SHA256:...) or a UUID."""
    a, b = m.span(1)
    value = s[a:b]
    if value.startswith("AAAA") or _UUID.fullmatch(value) or _FINGERPRINT.search(s, max(0, a - 8), a):
        return None
    return (a, b) if _looks_random(value) else None


_RULES: list[_Rule] = [
    _Rule(_PRIVATE_KEY, _group(0), needs=("PRIVATE KEY",)),
    _Rule(_PUTTY, _group(0), needs=("PuTTY-User-Key-File-",)),
    _Rule(_WEBHOOK, _group(0), needs=("://",)),
    _Rule(_URL_PASSWORD, _group(1, check=_not_placeholder), needs=("://",)),
    _Rule(_URL_USER_TOKEN, _group(1, check=_looks_random), needs=("://",)),
    _Rule(_CONN_FIELD, _group(1, check=_not_placeholder), folded=True,
          needs=("accountkey", "sharedaccess", "sharedsecretvalue", "clientsecret")),
    _Rule(_QUERY_PARAM, _group(1, check=lambda v: _tokenish(v) and _not_placeholder(v)), folded=True, needs=("=",)),
    _Rule(_JWT, _group(0, word=True), needs=("eyJ",)),
    _Rule(_AUTH_HEADER, _group(1, check=_tokenish), folded=True, needs=("authorization", "bearer", "ssws")),
    _Rule(_Within(r"[A-Za-z0-9_.+/=~:-]{16,}", _VENDOR), _group(0)),
    _Rule(_PASSWORD_HASH, _group(0), needs=("$",)),
    _Rule(_DOCKER_AUTH, _docker_auth, needs=('"auth"',)),
    _Rule(_CLI_FLAG, _group(1, check=_not_placeholder), folded=True, needs=("--",)),
    _Rule(_CURL_USER, _group(1, check=_not_placeholder), folded=True, needs=("curl",)),
    _Rule(_MYSQL_P, _group(1, check=_not_placeholder), needs=("mysql",)),
    _Rule(_PGPASS, _pgpass, needs=(":",)),
    _Rule(_ASSIGN, _assign_value, folded=True, needs=("passw", "passphrase", "pwd", "secret", "token", "api", "access",
                                                     "private", "credential", "client")),
    _Rule(_PROSE, _prose, folded=True, needs=("pass", "pw", "credential", "key", "token", "secret")),
    _Rule(_PASSWORD_ARG, _password_arg, folded=True, needs=("pass", "pw")),
    _Rule(_NEAR_SECRET_WORD, _near_secret, folded=True,
          needs=("key", "secret", "token", "passw", "credential", "signature")),
]


def _fold(text: str) -> str:
    """Lower-cased `text` with the same length (a character whose lower case is longer is kept as it is)."""
    low = text.lower()
    if len(low) == len(text):
        return low
    return "".join(c if len(c.lower()) != 1 else c.lower() for c in text)


def _overlapping(s: str, a: int, b: int) -> list[int]:
    """Starts of the `[REDACTED]`s that overlap s[a:b]."""
    n, out = len(REDACTED), []
    at = s.find(REDACTED, max(0, a - n + 1), b + n - 1)
    while 0 <= at < b:
        out.append(at)
        at = s.find(REDACTED, at + 1, b + n - 1)
    return out


def _pieces(text: str, a: int, b: int) -> list[Span]:
    """The parts of text[a:b] between the `[REDACTED]`s in it, cut before one that runs past `b`; [] when a
    `[REDACTED]` covers `a` (an earlier rule already redacted where this span starts: what follows is not ours)."""
    out, n = [], len(REDACTED)
    for at in _overlapping(text, a, b):
        if at <= a:
            return []
        out.append((a, at))
        a = at + n
        if a >= b:
            return out
    return out + [(a, b)]


def _apply(rule: _Rule, text: str, source: str) -> tuple[str, int]:
    """Replace the span the rule picks in each of its matches in `source` (`text`, or its folded copy).

    Existing `[REDACTED]`s are never swallowed, so the count is exactly the number of markers added; parts that
    hold only punctuation or look like placeholders are kept.
    """
    out: list[str] = []
    last = count = 0
    for m in rule.rx.finditer(source):
        span = rule.pick(m, text)
        if span is None or span[0] < last:
            continue
        for a, b in _pieces(text, *span):
            piece = text[a:b]
            if _LEFTOVER.sub("", piece) and not _placeholder_like(piece):
                out += [text[last:a], REDACTED]
                last = b
                count += 1
    if not count:
        return text, 0
    out.append(text[last:])
    return "".join(out), count


def _pass(text: str) -> tuple[str, int]:
    total, folded = 0, None
    for rule in _RULES:
        if rule.folded and folded is None:
            folded = _fold(text)
        source = folded if rule.folded else text
        if rule.needs and not any(word in source for word in rule.needs):
            continue
        text, n = _apply(rule, text, source)
        if n:
            total, folded = total + n, None
    return text, total


def redact(text: str) -> tuple[str, int]:
    """Return `text` with secrets replaced by `[REDACTED]`, and how many were replaced.

    A redaction can uncover another match (a value that a secret word's first candidate hid), so the rules run
    again until nothing changes (at most `_MAX_PASSES` times); text without secrets takes one pass.
    """
    total = 0
    for _ in range(_MAX_PASSES):
        text, n = _pass(text)
        total += n
        if not n:
            break
    return text, total


def shown(text: str | None) -> str | None:
    """Text on its way out (list, show, review, search, hook context): the current rules applied again, for
    memories stored before a rule existed."""
    return redact(text)[0] if text else text


def shown_line(text: str | None, width: int) -> str:
    """A text on its way out as one line: `shown`, whitespace folded, cut at `width` with an ellipsis."""
    flat = " ".join((shown(text) or "").split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"
