"""Only `command.py`: the hook command path of installs made before the split (see its docstring)."""
