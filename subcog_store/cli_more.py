from .cli import EXTENSIONS, command  # noqa: F401
