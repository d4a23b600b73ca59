"""The protobuf wire format's varint, for the readers that decode protobufs by hand without the protobuf package
(TensorBoard's events, W&B's run file)."""

from __future__ import annotations


class WireError(ValueError):
    """Bytes that are no protobuf encoding (a varint past the buffer's end or past 64 bits)."""


def varint(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    """The varint at `pos` (read no further than `end`) and the position after it."""
    result = shift = 0
    while True:
        if pos >= end or shift > 63:
            raise WireError("bad varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
