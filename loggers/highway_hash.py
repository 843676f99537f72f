"""HighwayHash-64, the checksum of every Riegeli block header, chunk header and chunk data.

Riegeli (the format of EnvLogger's files) hashes with HighwayHash under a fixed key (the bytes of
``"Riegeli/records\\n"`` twice). ``loggers.riegeli_files`` checks files with it to name the damaged one when
EnvLogger's C++ reader fails without saying which. Pure Python and slow (about 1.5 MB/s): chunk headers are
checked always, chunk data only when a file is diagnosed. No dependency beyond the standard library.

Example::

    riegeli_hash(block[8:24]) == int.from_bytes(block[:8], "little")   # an intact block header
"""

from __future__ import annotations

_MASK = (1 << 64) - 1
_LOW = 0xFFFFFFFF
_INIT0 = (0xDBE6D5D5FE4CCE2F, 0xA4093822299F31D0, 0x13198A2E03707344, 0x243F6A8885A308D3)
_INIT1 = (0x3BD39E10CB0EF593, 0xC0ACF169B5F18A8C, 0xBE5466CF34E90C6C, 0x452821E638D01377)
#: Riegeli's key: ``b"Riegeli/records\n"`` read as two little-endian 64-bit words, twice.
RIEGELI_KEY = (0x2F696C6567656952, 0x0A7364726F636572, 0x2F696C6567656952, 0x0A7364726F636572)


def _swap_halves(word: int) -> int:
    return ((word >> 32) | (word << 32)) & _MASK


def _rotate_halves(word: int, count: int) -> int:
    """Each 32-bit half of ``word`` rotated left by ``count`` (0..31) bits."""
    if not count:
        return word
    low, high = word & _LOW, word >> 32
    low = ((low << count) | (low >> (32 - count))) & _LOW
    high = ((high << count) | (high >> (32 - count))) & _LOW
    return low | (high << 32)


def _zipper_merge(high: int, low: int) -> tuple[int, int]:
    """The byte shuffle HighwayHash adds from one pair of lanes into the other: ``(to odd lane, to even lane)``."""
    to_even = ((((low & 0xFF000000) | (high & 0xFF00000000)) >> 24)
               | (((low & 0xFF0000000000) | (high & 0xFF000000000000)) >> 16)
               | (low & 0xFF0000) | ((low & 0xFF00) << 32) | ((high & 0xFF00000000000000) >> 8)
               | (low << 56)) & _MASK
    to_odd = ((((high & 0xFF000000) | (low & 0xFF00000000)) >> 24) | (high & 0xFF0000)
              | ((high & 0xFF0000000000) >> 16) | ((high & 0xFF00) << 24) | ((low & 0xFF000000000000) >> 8)
              | ((high & 0xFF) << 48) | (low & 0xFF00000000000000)) & _MASK
    return to_odd, to_even


class _State:
    """HighwayHash's four lanes of four 64-bit words."""

    def __init__(self, key: tuple[int, int, int, int]):
        self.v0 = [k ^ i for k, i in zip(key, _INIT0)]
        self.v1 = [_swap_halves(k) ^ i for k, i in zip(key, _INIT1)]
        self.mul0 = list(_INIT0)
        self.mul1 = list(_INIT1)

    def update(self, packet: bytes) -> None:
        """Mixes in one 32-byte packet."""
        v0, v1, mul0, mul1 = self.v0, self.v1, self.mul0, self.mul1
        for i in range(4):
            v1[i] = (v1[i] + mul0[i] + int.from_bytes(packet[8 * i:8 * i + 8], "little")) & _MASK
            mul0[i] ^= ((v1[i] & _LOW) * (v0[i] >> 32)) & _MASK
            v0[i] = (v0[i] + mul1[i]) & _MASK
            mul1[i] ^= ((v0[i] & _LOW) * (v1[i] >> 32)) & _MASK
        for source, target in ((v1, v0), (v0, v1)):
            for odd, even in ((1, 0), (3, 2)):
                add_odd, add_even = _zipper_merge(source[odd], source[even])
                target[odd] = (target[odd] + add_odd) & _MASK
                target[even] = (target[even] + add_even) & _MASK

    def update_tail(self, tail: bytes) -> None:
        """Mixes in the last ``len(tail)`` (1..31) bytes of the input."""
        size = len(tail)
        for i in range(4):
            self.v0[i] = (self.v0[i] + (size << 32) + size) & _MASK
            self.v1[i] = _rotate_halves(self.v1[i], size)
        whole = size & ~3
        packet = bytearray(32)
        packet[:whole] = tail[:whole]
        extra = size & 3
        if size & 16:
            packet[28:32] = tail[whole + extra - 4:whole + extra]
        elif extra:
            packet[16], packet[17], packet[18] = tail[whole], tail[whole + (extra >> 1)], tail[whole + extra - 1]
        self.update(bytes(packet))

    def digest64(self) -> int:
        """The 64-bit hash (the state is used up)."""
        for _ in range(4):
            v0 = self.v0
            self.update(b"".join(_swap_halves(w).to_bytes(8, "little") for w in (v0[2], v0[3], v0[0], v0[1])))
        return (self.v0[0] + self.v1[0] + self.mul0[0] + self.mul1[0]) & _MASK


def highway_hash64(data: bytes, key: tuple[int, int, int, int]) -> int:
    """HighwayHash-64 of ``data`` under the 256-bit ``key`` (four 64-bit words)."""
    state = _State(key)
    whole = len(data) - len(data) % 32
    view = memoryview(data)
    for at in range(0, whole, 32):
        state.update(view[at:at + 32])
    if whole < len(data):
        state.update_tail(bytes(view[whole:]))
    return state.digest64()


def riegeli_hash(data: bytes) -> int:
    """The hash Riegeli stores for ``data`` (HighwayHash-64 under ``RIEGELI_KEY``)."""
    return highway_hash64(data, RIEGELI_KEY)


__all__ = ["RIEGELI_KEY", "highway_hash64", "riegeli_hash"]
