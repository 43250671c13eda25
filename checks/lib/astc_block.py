"""ASTC block headers for the benchmarks: the weight grid of a block mode and a block's kind,
from the specification's tables (Khronos Data Format 1.3, section 23: block mode, partition
count, colour endpoint mode)."""

RANGES = [2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 24, 32]


def mode_grid(m):
    """(grid width, grid height, dual plane, weight range) of 2D block mode m (specification table)."""
    a, dp = (m >> 5) & 3, (m >> 10) & 1
    if m & 3:
        r, h, b, kind = ((m >> 4) & 1) | ((m & 3) << 1), (m >> 9) & 1, (m >> 7) & 3, (m >> 2) & 3
        if kind == 0: w, hh = b + 4, a + 2
        elif kind == 1: w, hh = b + 8, a + 2
        elif kind == 2: w, hh = a + 2, b + 8
        elif (m >> 8) & 1 == 0: w, hh = a + 2, (b & 1) + 6
        else: w, hh = (b & 1) + 2, a + 2
    else:
        r, h, b, kind = ((m >> 4) & 1) | (((m >> 2) & 3) << 1), (m >> 9) & 1, (m >> 9) & 3, (m >> 7) & 3
        if kind == 0: w, hh = 12, a + 2
        elif kind == 1: w, hh = a + 2, 12
        elif kind == 2: w, hh, dp, h = a + 6, b + 6, 0, 0
        else: w, hh = (10, 6) if (m >> 5) & 1 else (6, 10)
    return w, hh, bool(dp), RANGES[h * 6 + r - 2]


def header(block):
    """None for a void-extent (constant) block, else (partitions, colour endpoint mode or
    "mixed", dual plane, grid width, grid height, weight range) of the 16-byte `block`."""
    v = int.from_bytes(block[:16], "little")
    m = v & 0x7FF
    if m & 0x1FF == 0x1FC:
        return None
    gw, gh, dp, rng = mode_grid(m)
    p = ((v >> 11) & 3) + 1
    cem = (v >> 13) & 0xF if p == 1 else ((v >> 25) & 0xF if (v >> 23) & 3 == 0 else "mixed")
    return p, cem, dp, gw, gh, rng
