"""Helpers shared by tilepack's checks and benchmarks, one copy each: common (the binary, the
test data, running with a timeout, PSNR, peak RSS from /proc, `tilepack serve` on a free port,
HTTP), store (the sample region store), terrain (GDAL as the reference for terrain), packs (a
pausing proxy and a tile rewriter), proj_ctypes (libproj through ctypes), regions_attack."""
