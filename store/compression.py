"""How an archived log is stored: one zlib stream (``job_logs.compression`` = ``zlib``).

The collector compresses a log chunk by chunk as it downloads (``CompressedLog``), spooled to a
temporary file past ``SPOOL_BYTES``; every reader inflates it here, so the format has one home.
"""

from __future__ import annotations

import hashlib
import io
import tempfile
import zlib
from collections.abc import Iterator
from typing import Any, BinaryIO

COMPRESSION = "zlib"
COMPRESSION_LEVEL = 6
SPOOL_BYTES = 4 << 20  # compressed bytes of a log kept in memory; past that, a temporary file
CHUNK_BYTES = 1 << 20  # compressed bytes read back at a time, to classify or to store


class CompressedLog:
    """A log compressed as it downloads (``GitHubClient.download``'s sink): one zlib stream,
    the stored format, with the size and sha256 of what was written; in memory up to
    ``SPOOL_BYTES`` of compressed bytes, then in a temporary file."""

    def __init__(self) -> None:
        self.file: Any = None
        self.restart()

    def restart(self) -> None:
        if self.file is not None:
            self.file.close()
        self.file = tempfile.SpooledTemporaryFile(SPOOL_BYTES, prefix="ciflake-log-")  # noqa: SIM115
        self._compressor = zlib.compressobj(COMPRESSION_LEVEL)
        self._hash = hashlib.sha256()
        self.size = 0
        self.compressed_size = 0
        self.sha256 = ""

    def write(self, chunk: bytes, /) -> None:
        self.size += len(chunk)
        self._hash.update(chunk)
        self.file.write(self._compressor.compress(chunk))

    def finish(self) -> CompressedLog:
        """The download is complete: end the zlib stream."""
        self.file.write(self._compressor.flush())
        self.compressed_size = self.file.tell()
        self.sha256 = self._hash.hexdigest()
        return self

    def compressed(self) -> bytes:
        """All the compressed bytes (for a log of at most ``INLINE_BYTES`` of them)."""
        self.file.seek(0)
        data: bytes = self.file.read()
        return data

    def chunks(self, size: int = CHUNK_BYTES) -> Iterator[bytes]:
        """The compressed bytes, ``size`` at a time."""
        self.file.seek(0)
        while block := self.file.read(size):
            yield block

    def open(self) -> BinaryIO:
        """The log itself, inflated as it is read."""
        self.file.seek(0)
        return io.BufferedReader(_Inflating(self.file), CHUNK_BYTES)

    def close(self) -> None:
        self.file.close()


class _Inflating(io.RawIOBase):
    """A zlib stream, read from ``source``, as the bytes it holds."""

    def __init__(self, source: BinaryIO) -> None:
        self.source = source
        self._inflate = zlib.decompressobj()
        self._pending = b""
        self._offset = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while self._offset >= len(self._pending):
            if self._inflate.eof:
                return 0
            compressed = self._inflate.unconsumed_tail or self.source.read(CHUNK_BYTES)
            if compressed:
                self._pending = self._inflate.decompress(compressed, CHUNK_BYTES)
            else:
                self._pending = self._inflate.flush()
                if not self._pending:
                    return 0
            self._offset = 0
        size = min(len(buffer), len(self._pending) - self._offset)
        buffer[:size] = memoryview(self._pending)[self._offset : self._offset + size]
        self._offset += size
        return size


def compress(content: bytes) -> bytes:
    return zlib.compress(content, COMPRESSION_LEVEL)


def decompress(blob: bytes, compression: str | None) -> bytes:
    return zlib.decompress(blob) if compression == COMPRESSION else blob
