"""Arrow columns built straight from numpy buffers, for the batch tables a worker writes.

Why not ``pa.array``: its first call in a process imports pandas (pyarrow checks whether the
input is a pandas object), about 0.3 s of CPU in every worker process, paid while the run is
starting and the cores are busiest. Wrapping the numpy buffers gives the same arrays without
that import, and without a copy.

Without a copy means shared memory: a column made from an array of its own type views that
array, so the caller must not write to it afterwards (the batch code hands over arrays it
made for the table and never touches again; pass a copy of a buffer you reuse).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

_NUMERIC = {pa.int8(): np.int8, pa.int32(): np.int32, pa.int64(): np.int64}


def _validity(mask: np.ndarray | None) -> tuple[pa.Buffer | None, int]:
    """Arrow's validity bitmap (1 = present, least significant bit first) for ``mask``
    (True = null), and the null count."""
    if mask is None:
        return None, 0
    nulls = int(np.count_nonzero(mask))
    if nulls == 0:
        return None, 0
    return pa.py_buffer(np.packbits(~np.asarray(mask, dtype=bool), bitorder="little")), nulls


def numeric(values: np.ndarray, type_: pa.DataType) -> pa.Array:
    """An int8/int32/int64 column from ``values`` (converted to that width first; an array
    already of that width is shared, not copied)."""
    data = np.ascontiguousarray(values, dtype=_NUMERIC[type_])
    return pa.Array.from_buffers(type_, len(data), [None, pa.py_buffer(data)])


def booleans(values: np.ndarray) -> pa.Array:
    """A bool column (Arrow packs booleans as bits)."""
    flags = np.asarray(values, dtype=bool)
    return pa.Array.from_buffers(pa.bool_(), len(flags),
                                 [None, pa.py_buffer(np.packbits(flags, bitorder="little"))])


def strings(values: Sequence[str]) -> pa.Array:
    """A string column from Python strings (UTF-8 bytes end to end, with their offsets)."""
    encoded = [v.encode() for v in values]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int32)
    np.cumsum([len(b) for b in encoded], out=offsets[1:])
    return pa.Array.from_buffers(pa.string(), len(encoded),
                                 [None, pa.py_buffer(offsets), pa.py_buffer(b"".join(encoded))])


def int_lists(offsets: np.ndarray, values: np.ndarray) -> pa.Array:
    """A list<int32> column: row i holds ``values[offsets[i]:offsets[i + 1]]``."""
    return pa.ListArray.from_arrays(numeric(offsets, pa.int32()), numeric(values, pa.int32()))


def dictionary(indices: np.ndarray, values: Sequence[str] | np.ndarray,
               mask: np.ndarray | None = None) -> pa.DictionaryArray:
    """A string column as int32 indices into ``values``, null where ``mask`` is True."""
    idx = np.asarray(indices, dtype=np.int32)
    if mask is not None:
        idx = np.where(mask, 0, idx).astype(np.int32)
    validity, nulls = _validity(mask)
    arr = pa.Array.from_buffers(pa.int32(), len(idx), [validity, pa.py_buffer(idx)],
                                null_count=nulls)
    return pa.DictionaryArray.from_arrays(arr, strings(list(values)))


def constant(value: str, n: int) -> pa.DictionaryArray:
    """A column holding one string n times (no n Python strings)."""
    return dictionary(np.zeros(n, dtype=np.int32), [value])


def table(columns: dict[str, pa.Array]) -> pa.Table:
    """A table from named columns, in the order given."""
    return pa.Table.from_arrays(list(columns.values()), names=list(columns))
