"""A deterministic corpus of coding-assistant memories for the benchmarks, and its cached embeddings.

The sentences are realistic text, not random vectors: decisions, learnings and patterns about services,
databases, caches, queues, CI, ports, timeouts, libraries and versions, generated from templates and
vocabularies with a fixed seed, plus natural sentences from ../shared/data (MRPC, STS-B) when present.

Embeddings are cached in bench/out/ (or in SUBCOG_BENCH_EMBED_CACHE, a folder several checkouts share) keyed by a
hash of the model files and of every sentence, so only the first run pays for embedding the corpus.

    python -m bench.corpus --size 100000      # build and embed (prints how long embedding took)
"""
from __future__ import annotations

import argparse
import csv
import hashlib
import json
import os
import random
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from subcog_store.text.normalize import content_hash

OUT_DIR = Path(__file__).resolve().parent / "out"
EMBED_CACHE_DIR = Path(os.environ.get("SUBCOG_BENCH_EMBED_CACHE") or OUT_DIR)
SHARED_DIR = Path(os.environ.get("SUBCOG_SHARED_DIR") or Path(__file__).resolve().parents[2] / "shared")
DATA_DIR = SHARED_DIR / "data"
MODEL_MANIFEST = Path(__file__).resolve().parent.parent / "models" / "manifest.json"
FILLER_CORPUS = 100_000   # planted filler of any size is a prefix of this corpus (one embedding cache for all)
CORPUS_SEED = 20240601
QUERY_SEED = 777
NATURAL_QUERY_SHARE = 0.1   # natural sentences held out of the corpus, used as queries

# -- vocabularies ------------------------------------------------------------------------------------------
SERVICES = ["auth", "billing", "search", "notifications", "gateway", "ingest", "reporting", "checkout",
            "inventory", "user-profile", "scheduler", "webhooks", "payments", "media", "analytics", "admin",
            "export", "sync", "rate-limiter", "feature-flags", "audit", "email", "sessions", "catalog"]
DATABASES = ["PostgreSQL 16", "PostgreSQL 15", "MySQL 8.0", "SQLite", "DuckDB", "MongoDB 7", "Cassandra",
             "CockroachDB", "DynamoDB", "ClickHouse", "TimescaleDB", "MariaDB 11", "Elasticsearch 8",
             "OpenSearch", "Neo4j"]
CACHES = ["Redis", "Redis 7", "Memcached", "Valkey", "an in-process LRU", "Caffeine", "Varnish", "KeyDB",
          "the CDN edge cache", "Dragonfly"]
QUEUES = ["Kafka", "RabbitMQ", "SQS", "NATS JetStream", "Redis Streams", "Google Pub/Sub", "Celery",
          "Sidekiq", "BullMQ", "Pulsar"]
CI = ["GitHub Actions", "GitLab CI", "CircleCI", "Jenkins", "Buildkite", "the nightly pipeline",
      "the release workflow", "the pre-merge checks"]
LIBS = [("requests", "2.31"), ("httpx", "0.27"), ("pydantic", "2.6"), ("SQLAlchemy", "2.0"), ("FastAPI", "0.110"),
        ("Django", "5.0"), ("Flask", "3.0"), ("numpy", "1.26"), ("pandas", "2.2"), ("pytest", "8.1"),
        ("mypy", "1.9"), ("ruff", "0.3"), ("black", "24.2"), ("uvicorn", "0.29"), ("gunicorn", "21.2"),
        ("celery", "5.3"), ("boto3", "1.34"), ("grpcio", "1.62"), ("protobuf", "4.25"), ("alembic", "1.13"),
        ("React", "18.2"), ("Next.js", "14.1"), ("webpack", "5.90"), ("vite", "5.1"), ("TypeScript", "5.4"),
        ("eslint", "8.57"), ("jest", "29.7"), ("axios", "1.6"), ("express", "4.18"), ("prisma", "5.10"),
        ("tokio", "1.36"), ("serde", "1.0"), ("reqwest", "0.12"), ("clap", "4.5"), ("sqlx", "0.7"),
        ("gin", "1.9"), ("cobra", "1.8"), ("zap", "1.27"), ("Spring Boot", "3.2"), ("Hibernate", "6.4")]
LANGS = ["Python", "TypeScript", "Go", "Rust", "Java", "Kotlin", "Ruby"]
ENVS = ["production", "staging", "the dev cluster", "local docker compose", "the QA environment", "CI"]
TABLES = ["users", "orders", "invoices", "events", "sessions", "payments", "audit_log", "products", "jobs",
          "subscriptions", "api_keys", "documents", "messages", "accounts"]
COLUMNS = ["created_at", "user_id", "status", "email", "tenant_id", "external_id", "updated_at", "order_id",
           "account_id", "kind"]
REASONS = ["it supports partial indexes", "the team already operates it", "it halves the p99 latency",
           "it has native JSON support", "licensing is simpler", "it removes a network hop",
           "the managed offering is cheaper", "we need strict serializability", "it scales writes horizontally",
           "its client library is better maintained", "backups are point-in-time", "it keeps ops simple"]
CAUSES = ["the cache volume is cold", "a test depends on wall-clock time", "the runner runs out of memory",
          "two jobs share the same port", "the lock file is out of date", "the Docker layer cache is evicted",
          "a flaky network call to the package index times out", "tests run in random order",
          "the timezone is not UTC", "the artifact upload exceeds the size limit"]
FIXES = ["pinning the dependency", "adding a retry around the download", "setting TZ=UTC",
         "freezing time in the test", "raising the memory limit to 4 GB", "using a random free port",
         "regenerating the lock file", "splitting the job in two", "caching the virtualenv by lock hash"]
OPS = ["HTTP call to the payment provider", "database write", "queue publish", "S3 upload", "webhook delivery",
       "DNS lookup", "token refresh", "gRPC call to the search service"]
EVENTS = ["a user update", "a price change", "a deploy", "a permission change", "a schema migration",
          "a config reload", "a tenant deletion"]
TOOLS = [("uv", "pip"), ("ruff", "flake8"), ("pnpm", "npm"), ("esbuild", "babel"), ("ripgrep", "grep"),
         ("pytest-xdist", "serial pytest"), ("sccache", "a cold cargo build"), ("bun", "node"),
         ("orjson", "the json module"), ("polars", "pandas")]
ENTITIES = ["user profile", "feature flag", "exchange rate", "product price", "permission set", "session token",
            "search result", "tenant config", "avatar URL", "shipping quote"]
UNITS = ["seconds", "minutes", "ms"]
PEOPLE = ["the platform team", "the data team", "security", "the on-call engineer", "the frontend team",
          "the SRE team", "product", "the mobile team"]
FORMATS = ["JSON", "Protobuf", "Avro", "MessagePack", "CSV", "Parquet"]
HTTP = [400, 401, 403, 404, 409, 422, 429, 500, 502, 503, 504]

TEMPLATES = [
    "Decided to use {db} instead of {db2} for the {svc} service because {reason}.",
    "We chose {cache} as the cache in front of {db} for {svc}; {entity} entries expire after {n} {unit}.",
    "The {svc} service listens on port {port} in {env}, and {svc2} talks to it on port {port2}.",
    "Learned that {lib} {ver} breaks {svc} when {cause}; pin it to {lib} {ver2} until upstream fixes it.",
    "Set the {op} timeout to {n} {unit} in {svc}; the old value of {m} {unit} caused cascading failures.",
    "Pattern: wrap every {op} in a retry with exponential backoff, base {ms} ms, at most {k} attempts.",
    "The {job} job on {ci} fails when {cause}; fixed it by {fix}.",
    "Cache {entity} lookups in {cache} with a TTL of {n} {unit} and invalidate the key on {event}.",
    "The {queue} consumer for the {topic} topic must be idempotent because {queue} delivers at least once.",
    "Use {tool} instead of {alt} in the {svc} repository: {tool} takes {n} s where {alt} took {m} s.",
    "Migration {k:04d} adds an index on {table}.{col}; it took {n} minutes on the {env} database.",
    "Never call the {svc} API from inside a {db} transaction: it holds row locks on {table} for up to {n} s.",
    "The {svc} workers read from {queue} with a prefetch of {k} and a visibility timeout of {n} seconds.",
    "{people} asked that all {svc} endpoints return {code} with a JSON error body instead of plain text.",
    "Connection pool for {db} in {svc} is capped at {k} connections per instance; more caused {code} errors.",
    "Learned: {lib} {ver} changed the default of its timeout to {n} {unit}, which broke the {svc} client.",
    "Rate limit for the {svc} API is {k} requests per minute per API key; beyond that it answers {code}.",
    "Store {table} events as {fmt} in {queue}; the schema registry rejects messages without a version field.",
    "The {svc} service is written in {lang} and deployed to {env} with {k} replicas behind the gateway.",
    "Feature flag {flag} gates the new {svc} flow; remove it once {pct}% of traffic has used it for a week.",
    "Run the {table} backfill in batches of {batch} rows with a {ms} ms pause so replication lag stays low.",
    "Pattern for {lang}: validate input at the edge of {svc} and pass typed objects inward, never raw dicts.",
    "Health check of {svc} on {env} is GET /healthz on port {port}; it must answer within {ms} ms.",
    "Decision: {svc} owns the {table} table; other services read it through the {svc} API, never directly.",
    "Bumped {lib} from {ver} to {ver2} in {svc}; the only breaking change was the renamed config option.",
    "When {cache} is down, {svc} falls back to {db} and sheds {pct}% of read traffic to protect it.",
    "The {svc} nightly export writes {fmt} files to the data lake at {hour:02d}:00 UTC, about {n} GB a night.",
    "Logs from {svc} go to the central collector; keep them under {k} KB per request or they are dropped.",
    "CI caches the {lang} dependencies keyed by the lock file hash; a miss adds about {n} minutes to {job}.",
    "Secrets for {svc} come from the vault at start-up; rotating them needs a restart of all {k} pods.",
]
JOBS = ["unit-tests", "integration-tests", "lint", "build-image", "e2e", "deploy-staging", "typecheck",
        "migrations-check", "docs", "benchmarks"]
TOPICS = ["order-created", "payment-settled", "user-signed-up", "invoice-issued", "item-shipped", "audit-event",
          "price-changed", "session-expired"]


def _fill(rng: random.Random, template: str) -> str:
    lib, ver = rng.choice(LIBS)
    tool, alt = rng.choice(TOOLS)
    major, minor = ver.split(".", 1)
    ver2 = f"{major}.{int(minor) + rng.randint(1, 5)}" if minor.isdigit() else ver
    svc, svc2 = rng.sample(SERVICES, 2)
    db, db2 = rng.sample(DATABASES, 2)
    queue = rng.choice(QUEUES)
    n, m = rng.randint(2, 120), rng.randint(2, 120)
    return template.format(
        svc=svc, svc2=svc2, db=db, db2=db2, cache=rng.choice(CACHES), queue=queue, ci=rng.choice(CI),
        lib=lib, ver=ver, ver2=ver2, lang=rng.choice(LANGS), env=rng.choice(ENVS), table=rng.choice(TABLES),
        col=rng.choice(COLUMNS), reason=rng.choice(REASONS), cause=rng.choice(CAUSES), fix=rng.choice(FIXES),
        op=rng.choice(OPS), event=rng.choice(EVENTS), tool=tool, alt=alt, entity=rng.choice(ENTITIES),
        unit=rng.choice(UNITS), people=rng.choice(PEOPLE).capitalize(), fmt=rng.choice(FORMATS),
        code=rng.choice(HTTP), job=rng.choice(JOBS), topic=rng.choice(TOPICS), n=n, m=m,
        k=rng.randint(2, 64), ms=rng.choice([50, 100, 200, 250, 500, 750, 1000, 2000]),
        port=rng.choice([80, 443, 3000, 5000, 5432, 6379, 8000, 8080, 8443, 9000, 9090, 9200]) + rng.randint(0, 9),
        port2=rng.randint(1024, 65535), flag=f"{svc.replace('-', '_')}_v{rng.randint(2, 9)}",
        pct=rng.choice([5, 10, 25, 50, 90, 95, 99]), batch=rng.choice([500, 1000, 5000, 10000, 50000]),
        hour=rng.randint(0, 23))


def natural_sentences() -> list[str]:
    """MRPC and STS-B sentences (distinct, in file order); empty when the data is absent."""
    found: list[str] = []
    for name in ("msr_paraphrase_train.txt", "msr_paraphrase_test.txt"):
        path = DATA_DIR / "mrpc" / name
        if path.exists():
            with path.open(encoding="utf-8-sig") as f:
                for row in csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE):
                    if len(row) >= 5 and row[0] in ("0", "1"):
                        found += [row[3], row[4]]
    path = DATA_DIR / "stsb" / "sts-test.csv"
    if path.exists():
        with path.open(encoding="utf-8") as f:
            for line in f:
                cols = line.rstrip("\n").split("\t")
                if len(cols) >= 7:
                    found += [cols[5], cols[6]]
    out, seen = [], set()
    for text in found:
        text = text.strip()
        key = content_hash(text) if text else None
        if key and key not in seen:
            seen.add(key)
            out.append(text)
    return out


@dataclass
class Corpus:
    sentences: list[str]          # the memories, in insertion order; the first n make the n-memory store
    queries: list[str]            # distinct sentences that are NOT in the corpus (semantic check queries)
    fresh: list[str]              # more such sentences, not embedded in advance (capture throughput)
    natural: int                  # how many corpus sentences come from MRPC/STS-B


def build(size: int = 100_000, n_queries: int = 1000, n_fresh: int = 1000) -> Corpus:
    """`size` distinct memories (distinct after normalization, as the store's unique index requires) and
    `n_queries` distinct query sentences outside the corpus, deterministically."""
    natural = natural_sentences()
    rng = random.Random(CORPUS_SEED)
    rng.shuffle(natural)
    held_out = natural[:int(len(natural) * NATURAL_QUERY_SHARE)]
    natural = natural[len(held_out):]
    # Keep the natural share of the corpus at its share of the full 100k corpus, whatever the size.
    n_natural = min(len(natural), size * len(natural) // max(size, 100_000))
    seen: set[str] = set()
    generated: list[str] = []
    while len(generated) < size - n_natural:
        text = _fill(rng, rng.choice(TEMPLATES))
        key = content_hash(text)
        if key not in seen:
            seen.add(key)
            generated.append(text)
    natural_used = []
    for text in natural:
        if len(natural_used) >= n_natural:
            break
        key = content_hash(text)
        if key not in seen:
            seen.add(key)
            natural_used.append(text)
    sentences = generated + natural_used
    rng.shuffle(sentences)
    qrng = random.Random(QUERY_SEED)
    queries: list[str] = []
    natural_queries = [t for t in held_out if len(t) >= 50 and content_hash(t) not in seen]
    want_natural = min(len(natural_queries), n_queries // 5)
    for text in natural_queries[:want_natural]:
        seen.add(content_hash(text))
        queries.append(text)
    while len(queries) < n_queries:
        text = _fill(qrng, qrng.choice(TEMPLATES))
        key = content_hash(text)
        if key not in seen and len(text) >= 50:
            seen.add(key)
            queries.append(text)
    qrng.shuffle(queries)
    fresh: list[str] = []
    while len(fresh) < n_fresh:
        text = _fill(qrng, qrng.choice(TEMPLATES))
        key = content_hash(text)
        if key not in seen:
            seen.add(key)
            fresh.append(text)
    return Corpus(sentences, queries, fresh, len(natural_used))


CHUNK = 5000


def model_key() -> bytes:
    """What the cached vectors depend on: the model's part of models/manifest.json (its `model` and `files`), not
    the sections beside it (WordNet's `lexicon`, added later, left every vector as it was)."""
    if not MODEL_MANIFEST.exists():
        return b"no-manifest"
    spec = json.loads(MODEL_MANIFEST.read_text(encoding="utf-8"))
    return json.dumps({k: spec.get(k) for k in ("model", "files")}, sort_keys=True).encode()


def _chunk_path(texts: list[str], key: bytes | None = None) -> Path:
    h = hashlib.sha256()
    h.update(model_key() if key is None else key)
    for text in texts:
        h.update(text.encode("utf-8") + b"\n")
    return EMBED_CACHE_DIR / f"emb-{len(texts)}-{h.hexdigest()[:16]}.npy"


def _cached_chunk(texts: list[str]) -> Path | None:
    """The chunk's cached vectors: under the model's key, or under the whole manifest's (the key before
    `model_key`, still shared by caches written since the lexicon section; linked to the model's key when found)."""
    path = _chunk_path(texts)
    if path.exists():
        return path
    if MODEL_MANIFEST.exists():
        legacy = _chunk_path(texts, MODEL_MANIFEST.read_bytes())
        if legacy.exists():
            try:
                os.link(legacy, path)
            except OSError:
                return legacy
            return path
    return None


def embed_cached(texts: list[str], *, log=print) -> tuple[np.ndarray, dict]:
    """Unit vectors of `texts`, embedded in chunks of CHUNK sentences; each chunk is cached in EMBED_CACHE_DIR
    under a hash of the model's manifest entries (`model_key`) and its sentences, so a prefix of the corpus reuses
    the cache and an interrupted first run resumes where it stopped. info: how many were embedded now and how long
    it took."""
    EMBED_CACHE_DIR.mkdir(parents=True, exist_ok=True)
    parts: list[np.ndarray] = []
    embedder, embedded, seconds, load_s = None, 0, 0.0, 0.0
    for start in range(0, len(texts), CHUNK):
        chunk = texts[start:start + CHUNK]
        cached = _cached_chunk(chunk)
        if cached is not None:
            parts.append(np.load(cached))
            continue
        path = _chunk_path(chunk)
        if embedder is None:
            from subcog_store.model.embedder import Embedder

            embedder = Embedder()
            t0 = time.perf_counter()
            embedder.load()
            load_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        vectors = embedder.embed_batch(chunk)
        seconds += time.perf_counter() - t0
        embedded += len(chunk)
        tmp = path.with_name(path.stem + ".tmp.npy")
        np.save(tmp, vectors)
        tmp.rename(path)
        parts.append(vectors)
        log(f"  embedded {start + len(chunk)}/{len(texts)} ({embedded} now, {seconds:.0f} s, "
            f"{seconds * 1000 / embedded:.1f} ms/sentence)")
    info = {"sentences": len(texts), "embedded_now": embedded, "embed_seconds": round(seconds, 1),
            "ms_per_sentence": round(seconds * 1000 / embedded, 2) if embedded else None,
            "model_load_seconds": round(load_s, 2) if embedder else None, "cached": len(texts) - embedded}
    if not parts:
        return np.zeros((0, 384), dtype=np.float32), info
    return np.concatenate(parts), info


def embeddings(corpus: Corpus, size: int | None = None, *, log=print) -> tuple[np.ndarray, np.ndarray, dict]:
    """(vectors of the first `size` corpus sentences, query vectors, info), from the cache when possible."""
    size = len(corpus.sentences) if size is None else size
    vectors, info = embed_cached(corpus.sentences[:size], log=log)
    qvectors, qinfo = embed_cached(corpus.queries, log=log)
    info["queries"] = qinfo
    return vectors, qvectors, info


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--show", type=int, default=0, help="print this many sentences and stop")
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    corpus = build(args.size, args.queries)
    print(f"corpus: {len(corpus.sentences)} sentences ({corpus.natural} natural), {len(corpus.queries)} queries, "
          f"built in {time.perf_counter() - t0:.2f} s")
    if args.show:
        for text in corpus.sentences[:args.show]:
            print("  " + text)
        return 0
    _, _, info = embeddings(corpus, log=lambda *a, **k: print(*a, **k, flush=True))
    print(json.dumps(info))
    return 0


if __name__ == "__main__":
    sys.exit(main())
