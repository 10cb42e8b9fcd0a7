"""pgvector's `vector` on the wire: numpy float32 arrays in pgvector's binary format (a 2-byte dimension count,
2 unused bytes, then big-endian float4), both ways, without the `pgvector` package.

`register(con)` teaches one connection the type (its oid is looked up once per connection); a store's vectors
are unit length, so the inner product (`<#>`, negated) is the cosine similarity.
"""
from __future__ import annotations

import struct
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    import psycopg

_HEADER = struct.Struct(">HH")


class Vector:
    """A float32 vector to send as pgvector's `vector` (wraps a numpy array or its little-endian bytes)."""

    __slots__ = ("values",)

    def __init__(self, values: "np.ndarray | bytes"):
        import numpy as np

        self.values = np.frombuffer(values, dtype="<f4") if isinstance(values, (bytes, bytearray, memoryview)) \
            else np.asarray(values, dtype="<f4")


def to_wire(values: "np.ndarray") -> bytes:
    return _HEADER.pack(len(values), 0) + values.astype(">f4").tobytes()


def from_wire(data: bytes | memoryview) -> "np.ndarray":
    import numpy as np

    dim, _ = _HEADER.unpack_from(data)
    return np.frombuffer(bytes(data[4:4 + 4 * dim]), dtype=">f4").astype("<f4")


def register(con: "psycopg.Connection") -> None:
    """Dump Vector as binary `vector` and load `vector` columns as float32 numpy arrays on this connection."""
    from psycopg.adapt import Dumper, Loader
    from psycopg.pq import Format
    from psycopg.types import TypeInfo

    info = TypeInfo.fetch(con, "vector")
    if info is None:
        return   # an empty database before its first migration: the caller registers again after it

    class VectorDumper(Dumper):
        format = Format.BINARY
        oid = info.oid

        def dump(self, obj: Vector) -> bytes:
            return to_wire(obj.values)

    class VectorLoader(Loader):
        format = Format.BINARY

        def load(self, data) -> "np.ndarray":
            return from_wire(data)

    class VectorTextLoader(Loader):
        def load(self, data) -> "np.ndarray":
            import numpy as np

            return np.array([float(x) for x in bytes(data).decode()[1:-1].split(",")], dtype="<f4")

    info.register(con)
    con.adapters.register_dumper(Vector, VectorDumper)
    con.adapters.register_loader(info.oid, VectorLoader)
    con.adapters.register_loader(info.oid, VectorTextLoader)
