"""The known pattern of the fault tests' dataset image: every 4 KiB block
is its byte offset and a seed (two little-endian u64) repeated 256 times,
so that any byte read can be checked against what was written, wherever
it was read from and however a read was split.

    python3 dataset_pattern.py write BYTES SEED     the image's bytes, to stdout
    expected(offset, length, seed)                  the bytes at @offset
"""
import struct
import sys

BLOCK = 4096
_PAIR = struct.Struct("<QQ")


def expected(offset, length, seed):
    """The @length bytes at @offset (both multiples of BLOCK)."""
    return b"".join(_PAIR.pack(o, seed) * (BLOCK // _PAIR.size)
                    for o in range(offset, offset + length, BLOCK))


def write(size, seed, out):
    chunk = 1 << 20
    for off in range(0, size, chunk):
        out.write(expected(off, min(chunk, size - off), seed))


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] != "write":
        sys.exit("usage: dataset_pattern.py write BYTES SEED")
    write(int(sys.argv[2]), int(sys.argv[3]), sys.stdout.buffer)
