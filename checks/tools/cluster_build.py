#!/usr/bin/env python3
"""Build one region on a Dask cluster: N shard builds, then their merge (issue 12).

    checks/tools/cluster_build.py SOURCE... -o OUT --shards N [--scheduler ADDRESS] [--workers W]
                                  [--threads T] [--bin PATH] [--shard-dir DIR] [-- BUILD OPTIONS...]

Each shard is one Dask task running `tilepack build SOURCE... --shard K/N --resume
--workers T -o SHARD_DIR/shard-K-of-N.mbtiles`; the merge is one task that depends on them
all and runs `tilepack merge ... -o OUT` (on all the cores of its worker's machine unless
--merge-threads says otherwise: nothing else of this job runs then). Tasks are retried
(twice) when a worker dies, and a retried shard resumes from its journal instead of starting
over. The result equals the single-machine `tilepack build SOURCE... -o OUT` tile for tile.

Without --scheduler a LocalCluster with W worker processes (one thread each) runs here. With
--scheduler tcp://host:8786 (a dask-kubernetes or dask-jobqueue cluster, or `dask scheduler`
plus `dask worker`s) every worker must see SOURCE, the shard directory and OUT at the same
paths (a shared volume) and have the tilepack binary (--bin, default: ./.build/release/tilepack
if present, else `tilepack` on PATH). See docs/CLUSTER.md.

Prints one line per shard as it finishes (worker, start and end after submission, seconds),
the merge's line and a summary; exit status 1 when a task fails (its one-line tilepack error
is printed). Needs dask[distributed] (checks/requirements.txt).
"""
import argparse, os, shutil, subprocess, sys, time


def run_tilepack(args):
    """One tilepack invocation on a worker: (seconds, worker address, stdout, start and end
    wall-clock times, CPU seconds); raises with tilepack's error line on failure. The CPU
    seconds (user + system of the child) show the work apart from waiting for a busy core."""
    import resource
    from distributed import get_worker
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began, start = time.time(), time.monotonic()
    r = subprocess.run(args, capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(args[:2])} failed ({r.returncode}): {r.stderr.strip()}")
    try:
        where = get_worker().address
    except ValueError:
        where = "?"
    return time.monotonic() - start, where, r.stdout, began, time.time(), cpu


def merge_task(args, shard_results):
    """The merge, after every shard (`shard_results` only orders it after them)."""
    return run_tilepack(args)


def default_binary():
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".build", "release", "tilepack")
    if os.path.exists(here):
        return os.path.abspath(here)
    found = shutil.which("tilepack")
    if not found:
        sys.exit("cluster-build: no tilepack binary (build one with `swift build -c release` or pass --bin)")
    return found


def main():
    argv = sys.argv[1:]
    extra = []
    if "--" in argv:
        at = argv.index("--")
        argv, extra = argv[:at], argv[at + 1:]
    ap = argparse.ArgumentParser(description="Shard builds and their merge on a Dask cluster.")
    ap.add_argument("sources", nargs="+", help="GeoTIFF(s), a folder or a .vrt, as for `tilepack build`")
    ap.add_argument("-o", "--output", required=True, help="the merged archive")
    ap.add_argument("--shards", type=int, required=True, help="number of shard builds N")
    ap.add_argument("--scheduler", help="address of a running Dask scheduler (default: a LocalCluster here)")
    ap.add_argument("--workers", type=int, default=2, help="LocalCluster worker processes (default 2)")
    ap.add_argument("--threads", type=int, default=1, help="tilepack --workers of each shard build (default 1: the Dask workers are the parallelism)")
    ap.add_argument("--merge-threads", type=int, default=0,
                    help="tilepack merge --workers (default 0: all cores of the merge's machine)")
    ap.add_argument("--bin", default=None, help="tilepack binary, same path on every worker")
    ap.add_argument("--shard-dir", default=None, help="where shard archives go (default OUTPUT.shards/, kept on failure for a retry)")
    args = ap.parse_args(argv)
    if not 1 <= args.shards <= 4096:
        sys.exit(f"cluster-build: --shards {args.shards} must be 1…4096")
    if args.scheduler is None and args.workers < 1:
        sys.exit(f"cluster-build: --workers {args.workers} must be at least 1")

    from distributed import Client, LocalCluster, as_completed

    binary = os.path.abspath(args.bin) if args.bin else default_binary()
    sources = [os.path.abspath(s) for s in args.sources]
    output = os.path.abspath(args.output)
    shard_dir = os.path.abspath(args.shard_dir or output + ".shards")
    os.makedirs(shard_dir, exist_ok=True)
    n = args.shards

    t0 = time.monotonic()
    if args.scheduler:
        cluster, client = None, Client(args.scheduler)
    else:
        cluster = LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                               dashboard_address=None)
        client = Client(cluster)
    t_up = time.monotonic()
    print(f"cluster: {len(client.scheduler_info()['workers'])} workers ({args.scheduler or 'LocalCluster'}), "
          f"up in {t_up - t0:.2f} s", flush=True)

    shard_paths = [os.path.join(shard_dir, f"shard-{k}-of-{n}.mbtiles") for k in range(n)]
    t_sub = time.time()
    shard_futures = [
        client.submit(run_tilepack,
                      [binary, "build", *sources, "-o", shard_paths[k], "--shard", f"{k}/{n}", "--resume",
                       "--workers", str(args.threads), "--quiet", *extra],
                      key=f"tilepack-shard-{k}-of-{n}", pure=False, retries=2)
        for k in range(n)]
    merge_args = [binary, "merge", *shard_paths, "-o", output, "--quiet"]
    if args.merge_threads > 0:
        merge_args += ["--workers", str(args.merge_threads)]
    merge_future = client.submit(merge_task, merge_args, shard_futures,
                                 key=f"tilepack-merge-{n}", pure=False, retries=2)
    failed = False
    index = {f.key: k for k, f in enumerate(shard_futures)}
    for f in as_completed(shard_futures):
        k = index[f.key]
        try:
            secs, where, _, began, ended, cpu = f.result()
            print(f"shard {k}/{n}: {secs:.2f} s (cpu {cpu:.2f} s) on {where} "
                  f"({began - t_sub:.2f}–{ended - t_sub:.2f} s after submission)", flush=True)
        except Exception as e:  # the task's error, one line
            print(f"shard {k}/{n}: {e}", file=sys.stderr)
            failed = True
    if failed:
        client.close()
        if cluster: cluster.close()
        sys.exit(1)
    try:
        secs, where, out, began, ended, cpu = merge_future.result()
    except Exception as e:
        print(f"merge: {e}", file=sys.stderr)
        sys.exit(1)
    t_done = time.monotonic()
    print(f"merge: {secs:.2f} s (cpu {cpu:.2f} s) on {where} ({began - t_sub:.2f}–{ended - t_sub:.2f} s after submission)")
    print(out.strip())
    print(f"cluster-build: {n} shards + merge in {t_done - t_up:.2f} s on the cluster "
          f"({t_done - t0:.2f} s with its start-up)")
    client.close()
    if cluster:
        cluster.close()
    shutil.rmtree(shard_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
