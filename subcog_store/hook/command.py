"""An earlier install's hook command: `python -S -P <package>/hook/command.py EVENT ...`.

Settings files written before the hook folder was split by job still name this path. It does exactly what
`claude_code/command.py` (today's command) does, so those installs keep working until `install-hooks` runs again
and rewrites their command line to today's path (it recognises both as ours).
"""
import os
import sys

if __name__ == "__main__":
    _root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    if _root not in sys.path:
        sys.path.append(_root)   # after the standard library: nothing there is shadowed
    from subcog_store.claude_code.entry import main

    sys.exit(main(sys.argv[1:]))
