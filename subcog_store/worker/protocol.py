"""The worker's wire format, where its files live, and the version key both sides compare.

A message is one frame: two big-endian 32-bit lengths (header, blob), a UTF-8 JSON object, then raw bytes (the
hook's stdin, or float32 vectors). Every read has a deadline. Imports stay light: a hook imports this module.

Files (one set per user and install): `$XDG_RUNTIME_DIR/subcog-store/`, else `/tmp/subcog-store-<uid>/`, a
directory that must be owned by the user and mode 0700 before anything in it is trusted, holding
`worker-<install>.sock` (the socket), `.lock` (held by the live worker; fcntl.flock) and `.pid`. The install id
hashes the package directory and the environment (sys.prefix), so two installs of one user never share (or
stop) one worker.
"""
from __future__ import annotations

import _json
import os
import stat
import struct
import sys
import time
import zlib

PROTOCOL = 1
# SUBCOG_HOOK_BUDGET_SECS's default, here because the hook command's warm path reads it without importing config
HOOK_BUDGET_SECS = 20.0
# What a request queued behind the worker's own backlog work (a turn on a deferred capture, which gives way within
# an embedding step) waits for it beyond its own slot wait, before its caller runs it in process
BACKLOG_GIVE_WAY_SECS = 5.0
# The capture hooks' timeout in the client (SUBCOG_HOOK_TIMEOUT_SECS's default) and how long before it their minimum
# of work stops (capture/run.py and config.py take them from here): a capture in the worker may run past its budget
# until then
CAPTURE_TIMEOUT_SECS, TIMEOUT_MARGIN_SECS = 30.0, 5.0
CAPTURE_EVENTS = ("pre-compact", "session-end", "post-compact")   # the hooks with a minimum of work
HEAD = struct.Struct(">II")
MAX_HEADER = 64 << 20
MAX_BLOB = 64 << 20
PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))   # .../subcog_store
CHECKOUT = os.path.dirname(PACKAGE)                                      # its parent (a checkout or site-packages)
SOURCE_SUFFIXES = (".py", ".sql", ".json")
MODEL_FILES = ("manifest.json", "model.onnx", "tokenizer.json")


class ProtocolError(Exception):
    """A frame that is not ours: too large, not JSON, not an object, or the peer closed mid-frame."""


# -- JSON through the `json` package's own C functions: importing the package costs a hook ~8 ms (re, enum) ----
def _unencodable(value: object) -> object:
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def _no_constant(name: str) -> object:
    raise ValueError(f"{name} is not JSON")


class _Decoding:
    """What the C scanner reads from its context (json.JSONDecoder's attributes, strict JSON)."""
    strict, object_hook, object_pairs_hook = True, None, None
    parse_float, parse_int, parse_constant = float, int, staticmethod(_no_constant)


# markers, default, string encoder, indent, separators, sort_keys, skipkeys, allow_nan
_encode = _json.make_encoder(None, _unencodable, _json.encode_basestring_ascii, None, ":", ",", False, False,
                             False)
_scan = _json.make_scanner(_Decoding())


def dumps(value: object) -> str:
    """Compact ASCII JSON (an environment's lone surrogates pass as escapes), as json.dumps with separators."""
    return "".join(_encode(value, 0))


def loads(text: str) -> object:
    """Strict JSON, nothing before or after it; raises ValueError."""
    try:
        value, end = _scan(text, 0)
    except StopIteration:
        raise ValueError("not JSON") from None
    except RecursionError:
        raise ValueError("nested too deep") from None
    if end != len(text):
        raise ValueError("extra data after the JSON value")
    return value


# -- frames -----------------------------------------------------------------------------------------------------
def encode(header: dict, blob: bytes = b"") -> bytes:
    data = dumps(header).encode("ascii")
    return HEAD.pack(len(data), len(blob)) + data + blob


def send(sock, header: dict, blob: bytes = b"", timeout: float = 5.0) -> None:
    sock.settimeout(max(timeout, 0.001))
    sock.sendall(encode(header, blob))


def _read(sock, n: int, deadline: float) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("no answer in time")
        sock.settimeout(left)
        chunk = sock.recv(min(n - len(buf), 1 << 20))
        if not chunk:
            raise ProtocolError("connection closed" if not buf else "connection closed mid-frame")
        buf += chunk
    return bytes(buf)


def recv(sock, deadline: float) -> tuple[dict, bytes]:
    """One frame, read by `deadline` (time.monotonic); raises TimeoutError, ProtocolError or OSError."""
    header_len, blob_len = HEAD.unpack(_read(sock, HEAD.size, deadline))
    if header_len > MAX_HEADER or blob_len > MAX_BLOB:
        raise ProtocolError(f"frame too large ({header_len} + {blob_len} bytes)")
    try:
        header = loads(_read(sock, header_len, deadline).decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise ProtocolError("header is not JSON") from None
    if not isinstance(header, dict):
        raise ProtocolError("header is not a JSON object")
    return header, _read(sock, blob_len, deadline) if blob_len else b""


def peer_uid(sock) -> int:
    """The uid of the process at the other end (SO_PEERCRED; -1 where the platform has none)."""
    import _socket

    option = getattr(_socket, "SO_PEERCRED", None)
    if option is None:
        return -1
    return struct.unpack("3i", sock.getsockopt(_socket.SOL_SOCKET, option, struct.calcsize("3i")))[1]


# -- where --------------------------------------------------------------------------------------------------------
def environment_prefix() -> str:
    """sys.prefix as `site` sets it: a virtual environment's own directory, also in a hook started with -S."""
    if not sys.flags.no_site or "site" in sys.modules:
        return sys.prefix
    bindir = os.path.dirname(os.path.abspath(sys.executable))
    for conf in (os.path.join(bindir, "pyvenv.cfg"), os.path.join(os.path.dirname(bindir), "pyvenv.cfg")):
        if os.path.isfile(conf):
            return os.path.dirname(bindir)
    return sys.prefix


def install_id() -> str:
    data = "\0".join((PACKAGE, environment_prefix())).encode("utf-8", "surrogateescape")
    return f"{zlib.crc32(data):08x}"


class Paths:
    """The worker files of this install for one environment."""

    __slots__ = ("dir", "sock", "lock", "pid")

    def __init__(self, environ=None):
        environ = os.environ if environ is None else environ
        base = environ.get("XDG_RUNTIME_DIR") or ""
        self.dir = os.path.join(base, "subcog-store") if base and os.path.isabs(base) and os.path.isdir(base) \
            else f"/tmp/subcog-store-{os.getuid()}"
        stem = os.path.join(self.dir, f"worker-{install_id()}")
        self.sock, self.lock, self.pid = stem + ".sock", stem + ".lock", stem + ".pid"


class Address:
    """A socket path usable with bind/connect: AF_UNIX takes 108 bytes at most, so a longer one is reached
    through its directory's descriptor (/proc/self/fd/N/name). Use as a context manager."""

    def __init__(self, path: str):
        self.path, self._fd = path, None

    def __enter__(self) -> str:
        if len(os.fsencode(self.path)) < 100:
            return self.path
        self._fd = os.open(os.path.dirname(self.path), os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        return f"/proc/self/fd/{self._fd}/{os.path.basename(self.path)}"

    def __exit__(self, *exc: object) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def unsafe_dir(path: str, create: bool = False) -> str | None:
    """Why the worker directory cannot be trusted (None: ours, a real directory, mode 0700). `create` makes it."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        if not create:
            return "absent"
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            pass
        except OSError as e:
            return f"cannot create {path}: {e.strerror}"
        try:
            st = os.lstat(path)
        except OSError as e:
            return f"{path}: {e.strerror}"
    except OSError as e:
        return f"{path}: {e.strerror}"
    if not stat.S_ISDIR(st.st_mode):
        return f"{path} is not a directory"
    if st.st_uid != os.getuid():
        return f"{path} is owned by uid {st.st_uid}, not {os.getuid()}"
    if st.st_mode & 0o077:
        return f"{path} has mode {stat.S_IMODE(st.st_mode):04o}, not 0700"
    return None


def unsafe_socket(path: str) -> str | None:
    """Why the socket file cannot be trusted (None: a socket owned by this user); 'absent' when there is none."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return "absent"
    except OSError as e:
        return f"{path}: {e.strerror}"
    if not stat.S_ISSOCK(st.st_mode):
        return f"{path} is not a socket"
    if st.st_uid != os.getuid():
        return f"{path} is owned by uid {st.st_uid}"
    return None


# -- version ------------------------------------------------------------------------------------------------------
def _stamp(parts: list[str], root: str, suffixes: tuple[str, ...]) -> None:
    try:
        entries = sorted(os.scandir(root), key=lambda e: e.name)
    except OSError:
        return
    for entry in entries:
        if entry.is_dir(follow_symlinks=False):
            if entry.name != "__pycache__":
                _stamp(parts, entry.path, suffixes)
        elif entry.name.endswith(suffixes):
            try:
                st = entry.stat()
            except OSError:
                continue
            parts.append(f"{entry.path}:{st.st_size}:{st.st_mtime_ns}")


def version_key() -> str:
    """Changes when the package's source or SQL files, the model manifest or files shipped beside it, the
    installed packages or the interpreter change (sizes and modification times; no file is read)."""
    prefix = environment_prefix()
    parts = [str(PROTOCOL), sys.version, prefix]
    _stamp(parts, PACKAGE, SOURCE_SUFFIXES)
    if os.path.isfile(os.path.join(CHECKOUT, "sql", "schema", "001_store.sql")):
        _stamp(parts, os.path.join(CHECKOUT, "sql"), (".sql",))
    for name in MODEL_FILES:
        path = os.path.join(CHECKOUT, "models", name)
        try:
            st = os.stat(path)
            parts.append(f"{path}:{st.st_size}:{st.st_mtime_ns}")
        except OSError:
            pass
    site = os.path.join(prefix, "lib", f"python{sys.version_info[0]}.{sys.version_info[1]}", "site-packages")
    try:   # a package installed, upgraded or removed in this environment
        parts.append(f"{site}:{os.stat(site).st_mtime_ns}")
    except OSError:
        pass
    data = "\n".join(parts).encode("utf-8", "surrogateescape")
    return f"{zlib.crc32(data):08x}{zlib.adler32(data):08x}"
