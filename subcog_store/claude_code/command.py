"""The hook command Claude Code runs: `python -S -P <this file> EVENT [--db PATH] [--format F] [--dry-run]`.

Run as a script without `site` (-S: ~5 ms less start-up) and without its own directory on sys.path (-P), it
puts this package's parent at the end of sys.path and hands over to `claude_code.entry.main`. The warm worker path
needs nothing else (the standard library and this package); when the hook runs in process after all, `entry`
runs `site` first, so the installed packages (apsw, numpy, onnxruntime) are found. `subcog-store hook EVENT`
does the same through the full command line, a few milliseconds slower.
"""
import os
import sys

if __name__ == "__main__":
    _root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    if _root not in sys.path:
        sys.path.append(_root)   # after the standard library: nothing there is shadowed
    from subcog_store.claude_code.entry import main

    sys.exit(main(sys.argv[1:]))
