"""Bench only (bench/bench_warm_trace.py): a warm worker started with this directory first on PYTHONPATH and
BENCH_WARM_VECTOR_CACHE_OFF=1 in its environment never loads the vector cache (db/vectorcache.py's MIN_ROWS set
past any store), so the cache's first load on a store file can be priced apart. No product setting does this;
Python imports this module at start-up (site), the hook client (`python -S`) never does."""
import os

if os.environ.get("BENCH_WARM_VECTOR_CACHE_OFF") == "1":
    try:
        from subcog_store.db import vectorcache
    except ImportError:   # a tree without the cache (f205264): nothing to switch off
        pass
    else:
        vectorcache.MIN_ROWS = 1 << 62
