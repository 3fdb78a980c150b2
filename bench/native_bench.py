#!/usr/bin/env python3
"""native_bench: the native path (python/stria) against the mount and the ceiling.

    native_bench.py tar   --device DEV --fs-dir D --mount-dir M --pt-dir P --mb N --pids ...
    native_bench.py small --device DEV --fs-dir D --mount-dir M --pt-dir P --files N --pids ...
    native_bench.py ckpt  --device DEV --fs-dir D --local-dir L --mb N --pids ...

tar    writes tar shards of 64 MiB (WebDataset layout, samples of ~100 KB) totalling N MiB
       once per target, drops the page cache, and reads them back with tar parsing, one
       shard after the other: natively (stria.torch's PrefetchReader), through the Stria
       mount and through the passthrough (open()). MB/s, and CPU-seconds per GiB of the
       filesystem's processes (--pids) plus this process.
small  writes N files of 100 KB once per target, drops the page cache, and reads them with 8
       worker processes (each connected natively, or with open() on a mount). files/s. The
       passthrough gets at most 15,000 of them: passthrough_ll keeps a descriptor per inode
       and a process here may hold 20,000.
ckpt   saves a state dict of N MiB of tensors with stria.checkpoint.save, and writes the
       same bytes to local disk (--local-dir) as 8 files with fsync, then renames them.
       MB/s and CPU-seconds per GiB.
Prints one JSON object per measurement on stdout.
"""

import argparse
import io
import json
import multiprocessing
import os
import resource
import sys
import tarfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))

import stria  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")


def proc_cpu(pids):
    total = 0.0
    for p in pids:
        try:
            with open(f"/proc/{p}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / TICKS
        except OSError:
            pass
    return total


def self_cpu():
    s = resource.getrusage(resource.RUSAGE_SELF)
    c = resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


class Meter:
    def __init__(self, pids):
        self.pids = pids

    def __enter__(self):
        self.t0, self.c0, self.s0 = time.monotonic(), proc_cpu(self.pids), self_cpu()
        return self

    def __exit__(self, *exc):
        self.seconds = time.monotonic() - self.t0
        self.fs_cpu = proc_cpu(self.pids) - self.c0
        self.app_cpu = self_cpu() - self.s0


def drop_caches():
    os.sync()
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
    except OSError:
        print("native_bench: could not drop the page cache", file=sys.stderr)


def emit(**kw):
    print(json.dumps(kw), flush=True)


def make_tar(size, seed):
    buf = io.BytesIO()
    rnd = os.urandom
    with tarfile.open(fileobj=buf, mode="w") as tar:
        i = 0
        while buf.tell() < size:
            for ext, payload in (("jpg", rnd(100_000)), ("cls", str(i % 1000).encode())):
                info = tarfile.TarInfo(f"{seed:04d}{i:06d}.{ext}")
                info.size = len(payload)
                tar.addfile(info, io.BytesIO(payload))
            i += 1
    return buf.getvalue()


def cmd_tar(a, fs):
    shard = 64 << 20
    n = max(1, (a.mb << 20) // shard)
    names = [f"shard-{i:04d}.tar" for i in range(n)]
    for i, name in enumerate(names):
        blob = make_tar(shard, i)
        fs.write_bytes(f"{a.fs_dir}/{name}", blob, stripe_count=4)
        with open(f"{a.pt_dir}/{name}", "wb") as f:
            f.write(blob)
    from stria.torch import PrefetchReader, iterate_tar
    total = sum(fs.stat(f"{a.fs_dir}/{x}").st_size for x in names)
    for target in a.order.split(","):
        drop_caches()
        samples = 0
        with Meter(a.pids if target != "passthrough" else a.pt_pids) as m:
            for name in names:
                if target == "native":
                    stream = io.BufferedReader(PrefetchReader(fs, f"{a.fs_dir}/{name}"), 1 << 20)
                else:
                    d = a.mount_dir if target == "mount" else a.pt_dir
                    stream = open(f"{d}/{name}", "rb", buffering=1 << 20)
                with stream:
                    samples += sum(1 for _ in iterate_tar(stream))
        gib = total / 2**30
        emit(workload="tar", target=target, mb_s=total / 1e6 / m.seconds, samples=samples,
             cpu_per_gib=(m.fs_cpu + m.app_cpu) / gib, fs_cpu_per_gib=m.fs_cpu / gib,
             app_cpu_per_gib=m.app_cpu / gib, bytes=total)


def _read_native(args):
    device, paths = args
    fs = stria.connect(device)
    buf = bytearray(256 << 10)
    for p in paths:
        with fs.open(p, "rb", buffering=0) as f:
            while f.readinto(buf):
                pass
    fs.close()
    return len(paths)


def _read_mount(paths):
    buf = bytearray(256 << 10)
    for p in paths:
        with open(p, "rb", buffering=0) as f:
            while f.readinto(buf):
                pass
    return len(paths)


PT_MAX_FILES = 15_000


def cmd_small(a, fs):
    per_dir = 10_000
    names = [f"d{i // per_dir:03d}/f{i:06d}" for i in range(a.files)]
    pt_names = names[:PT_MAX_FILES]
    blob = os.urandom(100_000)
    for d in sorted({n.split("/")[0] for n in names}):
        fs.mkdir(f"{a.fs_dir}/{d}", exist_ok=True)
        os.makedirs(f"{a.pt_dir}/{d}", exist_ok=True)
    for n in names:
        fs.write_bytes(f"{a.fs_dir}/{n}", blob)
    for n in pt_names:
        with open(f"{a.pt_dir}/{n}", "wb") as f:
            f.write(blob)
    workers = 8
    for target in a.order.split(","):
        drop_caches()
        base = {"native": a.fs_dir, "mount": a.mount_dir, "passthrough": a.pt_dir}[target]
        paths = [f"{base}/{n}" for n in (pt_names if target == "passthrough" else names)]
        chunks = [paths[i::workers] for i in range(workers)]
        with Meter(a.pids if target != "passthrough" else a.pt_pids) as m:
            with multiprocessing.get_context("fork").Pool(workers) as pool:
                if target == "native":
                    done = sum(pool.map(_read_native, [(a.device, c) for c in chunks]))
                else:
                    done = sum(pool.map(_read_mount, chunks))
        gib = done * len(blob) / 2**30
        emit(workload="small", target=target, files_s=done / m.seconds, files=done,
             cpu_per_gib=(m.fs_cpu + m.app_cpu) / gib)


def cmd_ckpt(a, fs):
    import torch
    import stria.checkpoint
    n = 8
    per = (a.mb << 20) // n // 4
    state = {f"layer{i}": torch.randn(per) for i in range(n)}
    total = sum(t.numel() * 4 for t in state.values())
    for target in a.order.split(","):
        with Meter(a.pids if target == "native" else []) as m:
            if target == "native":
                stria.checkpoint.save(state, f"{a.fs_dir}/ckpt.pt", fs, shards=n)
            else:
                os.makedirs(a.local_dir, exist_ok=True)
                for name, t in state.items():
                    tmp = f"{a.local_dir}/{name}.tmp"
                    with open(tmp, "wb", buffering=0) as f:
                        mv = memoryview(t.numpy()).cast("B")
                        done = 0
                        while done < len(mv):
                            done += f.write(mv[done:])
                        os.fsync(f.fileno())
                    os.rename(tmp, f"{a.local_dir}/{name}")
                dfd = os.open(a.local_dir, os.O_RDONLY)
                os.fsync(dfd)
                os.close(dfd)
        gib = total / 2**30
        emit(workload="ckpt", target=target, mb_s=total / 1e6 / m.seconds,
             cpu_per_gib=(m.fs_cpu + m.app_cpu) / gib, bytes=total)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("workload", choices=["tar", "small", "ckpt"])
    p.add_argument("--device", required=True)
    p.add_argument("--fs-dir", required=True, help="directory inside the filesystem")
    p.add_argument("--mount-dir", help="the same directory through the Stria mount")
    p.add_argument("--pt-dir", help="a directory on the passthrough mount")
    p.add_argument("--local-dir", help="a directory on the local disk (ckpt)")
    p.add_argument("--mb", type=int, default=2048)
    p.add_argument("--files", type=int, default=100_000)
    p.add_argument("--order", default="native,mount,passthrough")
    p.add_argument("--pids", type=lambda s: [int(x) for x in s.split(",") if x], default=[])
    p.add_argument("--pt-pids", type=lambda s: [int(x) for x in s.split(",") if x], default=[])
    a = p.parse_args()
    fs = stria.connect(a.device)
    fs.mkdir(a.fs_dir, exist_ok=True)
    {"tar": cmd_tar, "small": cmd_small, "ckpt": cmd_ckpt}[a.workload](a, fs)


if __name__ == "__main__":
    main()
