"""EnvLogger's storage encoding (``envlogger.converters.codec.encode``) written straight to protobuf wire bytes.

EnvLogger's codec builds a ``storage_pb2.Data`` message scalar by scalar, copying every nested message into
its parent; for a language step (a few strings, small arrays and scalars) that walk costs far more than the
environment step itself. ``encode`` produces the same serialized message directly: each Python type is
mapped once to a small writer (the choice the codec makes with its ``isinstance`` chain), strings are
written as UTF-8 bytes, numeric arrays as one packed buffer, and nested values are concatenated with their
length prefixes. The bytes parse to a message equal to ``codec.encode(value)`` (``tests/test_wire.py`` checks
it on random nested values), so every stock reader decodes what it writes exactly as it decodes EnvLogger's.

Values the fast writers do not cover (empty arrays, object arrays, dicts with non-string keys, mixed-type
lists, unknown scalar types) are handed to the codec itself, which also raises its own errors for values it
refuses.
"""

from __future__ import annotations

import struct
from typing import Any, Callable

import numpy as np
from envlogger.converters import codec

#: EnvLogger's marker of a scalar: a shape with the single dimension -438, as a serialized ``Datum.Shape``
#: field of a ``Datum`` (field 1, holding dim (field 2) with size (field 1) = -438 as a 10-byte varint).
_SCALAR_SHAPE = b"\x0a\x0d\x12\x0b\x08\xca\xfc\xff\xff\xff\xff\xff\xff\xff\x01"
_U64 = 1 << 64


def _varint(value: int) -> bytes:
    """Protobuf varint of a non-negative integer (negative int32/int64 are passed as ``value + 2**64``)."""
    if value < 0x80:
        return bytes((value,))
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _field(tag: int, payload: bytes) -> bytes:
    """A length-delimited field: its key byte (``tag`` already shifted, wire type 2), length and payload."""
    size = len(payload)
    if size < 0x80:
        return bytes((tag, size)) + payload
    return bytes((tag,)) + _varint(size) + payload


def _data_datum(values: bytes, shape: bytes = _SCALAR_SHAPE) -> bytes:
    """A serialized ``Data`` holding a ``Datum`` (field 1) of ``shape`` and ``Values`` (field 2) ``values``."""
    return _field(0x0A, shape + _field(0x12, values))


def _scalar_data(values: bytes) -> bytes:
    """``_data_datum(values)`` for a scalar, with the common short case written in one concatenation."""
    size = len(values)
    if size < 0x80 - 17:  # the Datum (15-byte shape, key and length of the values, values) fits in 127 bytes
        return bytes((0x0A, size + 17)) + _SCALAR_SHAPE + bytes((0x12, size)) + values
    return _data_datum(values)


def _signed_varints(values: Any) -> bytes:
    return b"".join(_varint(v if v >= 0 else v + _U64) for v in values)


def _unsigned_varints(values: Any) -> bytes:
    return b"".join(_varint(v) for v in values)


def _codec(value: Any) -> bytes:
    """EnvLogger's own encoding of ``value``, for what the writers below leave to it."""
    return codec.encode(value).SerializeToString()


# ---- scalars: Values field numbers as in envlogger/proto/storage.proto ----

def _str(value: str) -> bytes:
    cached = _SHORT_STRINGS.get(value)
    if cached is None:
        cached = _scalar_data(_field(0x42, value.encode("utf-8")))  # string_values = 8
        if len(value) <= 64 and len(_SHORT_STRINGS) < 65_536:
            _SHORT_STRINGS[value] = cached
    return cached


#: encodings of short strings seen so far: a language task's feedback, moves and field values repeat.
_SHORT_STRINGS: dict[str, bytes] = {}


def _bytes(value: bytes) -> bytes:
    return _scalar_data(_field(0x4A, bytes(value)))  # bytes_values = 9


_TRUE, _FALSE = _scalar_data(b"\x3a\x01\x01"), _scalar_data(b"\x3a\x01\x00")  # bool_values = 7 (packed)


def _bool(value: Any) -> bytes:
    return _TRUE if value else _FALSE


def _bigint(value: int) -> bytes:
    value = int(value)
    cached = _SMALL_INTS.get(value)
    if cached is None:
        cached = _scalar_data(_field(0x52, value.to_bytes(value.bit_length() // 8 + 1, "big", signed=True)))  # 10
        if -256 <= value <= 256:
            _SMALL_INTS[value] = cached
    return cached


#: encodings of small Python integers (step types, turn counters), computed once.
_SMALL_INTS: dict[int, bytes] = {}


def _float32(value: Any) -> bytes:
    return _scalar_data(b"\x0a\x04" + struct.pack("<f", value))  # float_values = 1 (packed)


def _float64(value: Any) -> bytes:
    cached = _FLOATS.get(value)
    if cached is None:
        cached = _scalar_data(b"\x12\x08" + struct.pack("<d", value))  # double_values = 2 (packed)
        if value and len(_FLOATS) < 4096:  # never 0.0, which would stand for -0.0 too
            _FLOATS[value] = cached
    return cached


#: encodings of the (non-zero) float64 scalars seen so far: rewards and discounts repeat.
_FLOATS: dict[float, bytes] = {}


def _scalar_varint(tag: int, signed: bool) -> Callable[[Any], bytes]:
    def write(value: Any) -> bytes:
        v = int(value)
        return _scalar_data(_field(tag, _varint(v + _U64 if signed and v < 0 else v)))
    return write


def _scalar_packed(tag: int, fmt: str) -> Callable[[Any], bytes]:
    packer = struct.Struct(fmt)

    def write(value: Any) -> bytes:
        return _scalar_data(_field(tag, packer.pack(value)))
    return write


_SCALARS: dict[type, Callable[[Any], bytes]] = {
    np.float32: _float32, float: _float64, np.float64: _float64,
    np.int32: _scalar_varint(0x1A, True), np.int64: _scalar_varint(0x22, True),
    np.uint32: _scalar_varint(0x2A, False), np.uint64: _scalar_varint(0x32, False),
    np.int8: _scalar_packed(0x5A, ">b"), np.int16: _scalar_packed(0x62, ">h"),
    np.uint8: _scalar_packed(0x6A, ">B"), np.uint16: _scalar_packed(0x72, ">H"),
}


# ---- arrays ----

def _array_shape(array: np.ndarray) -> bytes:
    """The ``Datum.Shape`` field of a non-empty array (absent for a 0-d array, as the codec leaves it)."""
    shape = array.shape
    cached = _SHAPES.get(shape)
    if cached is None:
        dims = b"".join(_field(0x12, b"\x08" + _varint(d)) for d in shape)
        cached = _SHAPES[shape] = _field(0x0A, dims) if dims else b""
    return cached


#: serialized shapes seen so far (arrays of a step keep their shapes from step to step).
_SHAPES: dict[tuple[int, ...], bytes] = {}


def _values_writer(dtype: np.dtype) -> Callable[[np.ndarray], bytes] | None:
    """The writer of the ``Values`` of a non-empty array of ``dtype`` as the codec fills them (None: left to it)."""
    if dtype == np.float32:
        return lambda a: _field(0x7A, a.astype(">f4").tobytes())  # float_values_buffer = 15
    if dtype == np.float64:
        return lambda a: _field(0x12, a.astype("<f8").tobytes())
    if dtype == np.bool_:
        return lambda a: _field(0x3A, a.astype(np.uint8).tobytes())
    kind, size = dtype.kind, dtype.itemsize
    if kind in "iu" and size in (4, 8):
        tag = {("i", 4): 0x1A, ("i", 8): 0x22, ("u", 4): 0x2A, ("u", 8): 0x32}[kind, size]
        varints = _signed_varints if kind == "i" else _unsigned_varints
        return lambda a: _field(tag, varints(a.ravel().tolist()))
    if kind in "iu" and size in (1, 2):
        tag = {("i", 1): 0x5A, ("i", 2): 0x62, ("u", 1): 0x6A, ("u", 2): 0x72}[kind, size]
        big_endian = f">{kind}{size}"
        return lambda a: _field(tag, a.astype(big_endian).tobytes())
    if kind == "U":
        return lambda a: b"".join(_field(0x42, s.encode("utf-8")) for s in a.ravel().tolist())
    if kind == "S":
        return lambda a: b"".join(_field(0x4A, s) for s in a.ravel().tolist())
    return None


#: the values writer of each array dtype seen so far.
_VALUES_WRITERS: dict[np.dtype, Callable[[np.ndarray], bytes] | None] = {}


def _array_values(array: np.ndarray) -> bytes | None:
    """``Values`` of a non-empty array as the codec fills them, or None for a dtype left to the codec."""
    dtype = array.dtype
    try:
        writer = _VALUES_WRITERS[dtype]
    except KeyError:
        writer = _VALUES_WRITERS[dtype] = _values_writer(dtype)
    return None if writer is None else writer(array)


def _ndarray(array: np.ndarray) -> bytes:
    values = _array_values(array) if array.size else None
    if values is None:
        return _codec(array)
    return _data_datum(values, _array_shape(array))


# ---- containers ----

def _elements(items: list[bytes]) -> bytes:
    """Serialized ``Data`` elements as the repeated field 1 (``values``) of an ``Array`` or a ``Tuple``."""
    parts = []
    for item in items:
        size = len(item)
        parts.append(bytes((0x0A, size)) if size < 0x80 else b"\x0a" + _varint(size))
        parts.append(item)
    return b"".join(parts)


def encoded_list(items: list[bytes]) -> bytes:
    """The serialized ``Data`` of a list whose elements are already serialized ``Data`` (``b""`` when empty)."""
    return _field(0x12, _elements(items)) if items else b""  # array = 2


def encoded_tuple(items: list[bytes]) -> bytes:
    """The serialized ``Data`` of a tuple whose elements are already serialized ``Data`` (``b""`` when empty)."""
    return _field(0x1A, _elements(items)) if items else b""  # tuple = 3


def _list(value: list) -> bytes:
    if not value:
        return b""
    first = type(value[0])
    if not all(isinstance(x, first) for x in value):
        return _codec(value)  # the codec raises its own error for a mixed list
    return encoded_list([encode(x) for x in value])


def _tuple(value: tuple) -> bytes:
    return encoded_tuple([encode(x) for x in value])


def _dict(value: dict) -> bytes:
    if not value:
        return b""
    entries = []
    for key, item in value.items():
        prefix = _KEYS.get(key) if type(key) is str else None
        if prefix is None:
            if not isinstance(key, str):
                return _codec(value)  # non-string keys go to the codec's kvs
            prefix = _field(0x0A, key.encode("utf-8"))
            if len(_KEYS) < 10_000:
                _KEYS[key] = prefix
        item = encode(item)
        size = len(item)
        entry = prefix + (bytes((0x12, size)) if size < 0x80 else b"\x12" + _varint(size)) + item
        size = len(entry)
        entries.append((bytes((0x0A, size)) if size < 0x80 else b"\x0a" + _varint(size)) + entry)
    return _field(0x22, b"".join(entries))  # dict = 4, values (map entries) = 1


#: serialized map keys (field 1 of a map entry) seen so far: dict keys repeat at every step.
_KEYS: dict[str, bytes] = {}


def _writer_for(kind: type) -> Callable[[Any], bytes]:
    """The writer of values of type ``kind``, chosen in the codec's order of ``isinstance`` checks."""
    if issubclass(kind, list):
        return _list
    if issubclass(kind, tuple):
        return _tuple
    if issubclass(kind, dict):
        return _dict
    if issubclass(kind, np.ndarray):
        return _ndarray
    if issubclass(kind, str):
        return _str
    if issubclass(kind, bytes):
        return _bytes
    if issubclass(kind, (bool, np.bool_)):
        return _bool
    if issubclass(kind, int):
        return _bigint
    return _SCALARS.get(kind, _codec)


_WRITERS: dict[type, Callable[[Any], bytes]] = {}


def encode(value: Any) -> bytes:
    """The serialized ``storage_pb2.Data`` of ``value``: parses to a message equal to ``codec.encode(value)``."""
    if value is None:
        return b""
    try:
        return _WRITERS[type(value)](value)
    except KeyError:
        if type(value) in _WRITERS:
            raise  # a KeyError of the writer itself
    writer = _WRITERS[type(value)] = _writer_for(type(value))
    return writer(value)


__all__ = ["encode", "encoded_list", "encoded_tuple"]
