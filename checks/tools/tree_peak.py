#!/usr/bin/env python3
"""Wall time and peak RSS of a whole process tree (the command and every process it starts).

    checks/tools/tree_peak.py OUT.json -- COMMAND [ARGS...]

GNU time's %M is the largest single process, which undercounts tools that fork workers
(rio mbtiles -j 2 runs a multiprocessing pool). This samples /proc every 20 ms and sums
VmRSS over the tree (walking it through /proc/PID/task/TID/children: a scan of all of /proc
every 20 ms took ~10 % of a core, on a 2-core machine 5 % of the CPU of the builds it timed); it
also records the rusage maximum of any one process. Writes
{"seconds", "tree_peak_mib", "max_process_mib", "status"} to OUT.json and exits with the
command's status. Sampling can miss a peak shorter than 20 ms.
"""
import json
import os
import resource
import subprocess
import sys
import time

# The one copy of the /proc readers: checks/lib/common.py (this tool runs by its path).
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from checks.lib.common import descendants, rss_kib  # noqa: E402


def main():
    if len(sys.argv) < 4 or sys.argv[2] != "--":
        sys.exit("usage: tree-peak OUT.json -- COMMAND [ARGS...]")
    out, cmd = sys.argv[1], sys.argv[3:]
    start = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
    peak = 0
    while proc.poll() is None:
        # None: gone (or a zombie) between listing and reading.
        total = sum(rss_kib(p) or 0 for p in [proc.pid, *descendants(proc.pid)])
        peak = max(peak, total)
        time.sleep(0.02)
    seconds = time.monotonic() - start
    single = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    with open(out, "w") as f:
        json.dump({"seconds": round(seconds, 2), "tree_peak_mib": round(max(peak, single) / 1024, 1),
                   "max_process_mib": round(single / 1024, 1), "status": proc.returncode}, f)
    sys.exit(proc.returncode)


if __name__ == "__main__":
    main()
