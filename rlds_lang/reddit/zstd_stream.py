"""Reading a Zstandard file as a stream of decompressed chunks of bounded size, refusing a truncated one.

Pushshift's Reddit dumps are ``.zst`` files of one or more Zstandard frames, compressed with windows of up to
2 GiB. ``zstd_chunks`` yields their decompressed bytes ``chunk`` bytes at a time whatever the compression
ratio (a 2 KB file may hold 256 MiB of one repeated byte: decompressing it in one call would hold all of it),
and first walks the frames' headers (``check_frames``, a few bytes a block, no decompression) so that a file
that ends inside a frame (an interrupted download) is an error naming the file, before anything is read from
it: the stream reader itself would stop quietly at the cut. Corrupt data is an error naming the file. Errors
are ``error_cls`` built by ``rlds_lang.input_errors.input_error``.
"""

from __future__ import annotations

import os
from typing import BinaryIO, Iterator

from rlds_lang.input_errors import input_error

#: the magic number that starts a Zstandard frame, and the range of those of skippable frames (RFC 8878).
FRAME_MAGIC = 0xFD2FB528
SKIPPABLE_MAGIC = range(0x184D2A50, 0x184D2A60)
#: the largest window accepted (pushshift's dumps use 2 GiB windows).
MAX_WINDOW = 2 ** 31
#: the longest frame header (magic included) and the size of a block header.
_MAX_HEADER, _BLOCK_HEADER = 18, 3


def check_frames(path: str, error_cls: type[Exception]) -> int:
    """Walks the frame and block headers of the Zstandard file ``path``; returns how many frames it holds.
    ``error_cls`` naming the file when it ends inside a frame ("truncated") or a header is not Zstandard's."""
    import zstandard

    size, frames, at = os.path.getsize(path), 0, 0

    def truncated() -> Exception:
        return input_error(error_cls, path, f"truncated: the file ends inside a Zstandard frame after {size:,} bytes "
                           "(an interrupted download or copy?)")

    with open(path, "rb") as f:
        while at < size:
            f.seek(at)
            head = f.read(_MAX_HEADER)
            if len(head) < 8:
                raise truncated()
            magic = int.from_bytes(head[:4], "little")
            if magic in SKIPPABLE_MAGIC:
                at += 8 + int.from_bytes(head[4:8], "little")
                continue
            if magic != FRAME_MAGIC:
                raise input_error(error_cls, path, f"corrupt Zstandard data: no frame starts at byte {at:,}")
            try:
                header, checksum = zstandard.frame_header_size(head), zstandard.get_frame_parameters(head).has_checksum
            except zstandard.ZstdError as e:
                if at + len(head) >= size:
                    raise truncated() from None
                raise input_error(error_cls, path, f"corrupt Zstandard frame header at byte {at:,}: {e}") from None
            at += header
            last = False
            while not last:
                f.seek(at)
                block = f.read(_BLOCK_HEADER)
                if len(block) < _BLOCK_HEADER:
                    raise truncated()
                bits = int.from_bytes(block, "little")
                last, kind, length = bool(bits & 1), (bits >> 1) & 3, bits >> 3
                if kind == 3:
                    raise input_error(error_cls, path, f"corrupt Zstandard data: reserved block type at byte {at:,}")
                at += _BLOCK_HEADER + (1 if kind == 1 else length)  # an RLE block stores its byte once
            at += 4 if checksum else 0
            frames += 1
            if at > size:
                raise truncated()
    if at > size:
        raise truncated()
    return frames


def zstd_chunks(raw: BinaryIO, path: str, error_cls: type[Exception], chunk: int) -> Iterator[bytes]:
    """The decompressed bytes of the Zstandard file open as ``raw`` (frames one after another), ``chunk`` bytes
    at a time at most, after ``check_frames``; corrupt data raises ``error_cls`` naming ``path``."""
    import zstandard

    check_frames(path, error_cls)
    reader = zstandard.ZstdDecompressor(max_window_size=MAX_WINDOW).stream_reader(raw, read_across_frames=True,
                                                                                  closefd=False)
    done = 0
    while True:
        try:
            data = reader.read(chunk)
        except zstandard.ZstdError as e:
            raise input_error(error_cls, path, f"corrupt Zstandard data after {done:,} decompressed bytes: {e}") \
                from None
        if not data:
            return
        done += len(data)
        yield data


__all__ = ["FRAME_MAGIC", "MAX_WINDOW", "SKIPPABLE_MAGIC", "check_frames", "zstd_chunks"]
