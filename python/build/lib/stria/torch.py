"""PyTorch datasets over Stria's native path (no mount, no FUSE copy).

    from stria.torch import FileDataset, TarShardDataset
    ds = TarShardDataset("10.0.0.5@tcp:/training", "/shards")       # WebDataset tar shards
    loader = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=8)
    for sample in loader:          # {"__key__": "000123", "jpg": b"...", "cls": b"3"}
        ...

FileDataset is map-style: one sample per file (the small-image case). TarShardDataset is an
IterableDataset over tar shards in the WebDataset layout (the members of one sample share a
key, the name up to the first dot of its last path component, and are adjacent in the tar):
each DataLoader worker of each rank reads a disjoint set of shards, so every sample is seen
exactly once per epoch; shards are read in large sequential chunks with the next chunks
already in flight (the native asynchronous queue).

A Stria connection does not survive fork(): each dataset connects lazily in the process that
iterates it, so DataLoader workers (fork or spawn) each get their own.
"""

import io
import os
import random
import tarfile

import torch.utils.data as _data

import stria

__all__ = ["FileDataset", "TarShardDataset", "PrefetchReader", "shards_for"]


class _Lazy:
    """A connection per process, made on first use."""

    def __init__(self, device):
        self.device = device
        self._fs = None
        self._pid = None

    def fs(self):
        if self._fs is None or self._pid != os.getpid():
            self._fs = stria.connect(self.device)
            self._pid = os.getpid()
        return self._fs

    def __getstate__(self):
        return {"device": self.device, "_fs": None, "_pid": None}


def _list_files(fs, root, suffixes):
    out = []
    for dirpath, _dirs, files in fs.walk(root):
        for name in files:
            if suffixes is None or name.endswith(tuple(suffixes)):
                out.append(dirpath.rstrip("/") + "/" + name)
    out.sort()
    return out


class FileDataset(_data.Dataset):
    """Map-style: sample i is the bytes of the i-th file (sorted) under `root`, or of
    `files` when given; `transform(bytes, path)` maps it (decode an image, ...)."""

    def __init__(self, device, root=None, *, files=None, suffixes=None, transform=None):
        self._conn = _Lazy(device if device is not None else stria.find_device())
        if files is None:
            if root is None:
                raise ValueError("FileDataset needs root or files")
            files = _list_files(self._conn.fs(), root, suffixes)
        self.files = list(files)
        self.transform = transform

    def __len__(self):
        return len(self.files)

    def __getitem__(self, i):
        path = self.files[i]
        data = self._conn.fs().read_bytes(path)
        return self.transform(data, path) if self.transform else data


def shards_for(shards, rank, world_size, worker, num_workers):
    """The shards that worker `worker` of rank `rank` reads: disjoint, and together all."""
    slot = rank * num_workers + worker
    return shards[slot::world_size * num_workers]


def _rank_and_world():
    try:
        import torch.distributed as dist
        if dist.is_available() and dist.is_initialized():
            return dist.get_rank(), dist.get_world_size()
    except ImportError:
        pass
    return int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))


class PrefetchReader(io.RawIOBase):
    """Sequential reads of one file through a native queue: `depth` chunks of `chunk`
    bytes are in flight ahead of the reader, so the network and the OSTs stay busy while
    the caller parses. Use it where a file is read front to back (tar shards)."""

    def __init__(self, fs, path, chunk=8 << 20, depth=2):
        super().__init__()
        self._f = stria.File(fs, path, "rb")
        self._size = self._f.size()
        self._q = fs.queue(depth)
        self._chunk = chunk
        self._depth = depth
        self._next = 0        # offset of the next chunk to submit
        self._ready = {}      # offset -> bytes
        self._inflight = 0
        self._cur = memoryview(b"")
        self._cur_off = 0     # file offset of _cur[0]
        self.name = path
        self._fill()

    def _fill(self):
        while self._inflight < self._depth and self._next < self._size:
            n = min(self._chunk, self._size - self._next)
            buf = bytearray(n)
            if not self._q.submit_read(self._f, self._next, buf, (self._next, buf)):
                break
            self._next += n
            self._inflight += 1

    def readable(self):
        return True

    def readinto(self, b):
        out = memoryview(b).cast("B")
        while not len(self._cur):
            want = self._cur_off
            if want >= self._size:
                return 0
            while want not in self._ready:
                if self._inflight == 0:
                    raise OSError(5, f"read-ahead of {self.name} stalled at offset {want}")
                for (off, buf), n in self._q.complete(1, self._depth):
                    self._inflight -= 1
                    self._ready[off] = memoryview(buf)[:n]
            self._cur = self._ready.pop(want)
            self._fill()
            if not len(self._cur):
                return 0
        n = min(len(out), len(self._cur))
        out[:n] = self._cur[:n]
        self._cur = self._cur[n:]
        self._cur_off += n
        return n

    def close(self):
        if not self.closed:
            self._q.close()
            self._f.close()
        super().close()


def _key_and_field(name):
    base = name.rsplit("/", 1)[-1]
    dirname = name[: len(name) - len(base)]
    if "." not in base:
        return dirname + base, ""
    stem, ext = base.split(".", 1)
    return dirname + stem, ext


def iterate_tar(stream, shard=None):
    """The samples of one WebDataset tar: dicts of field -> bytes, with __key__ and
    __shard__."""
    sample = None
    with tarfile.open(fileobj=stream, mode="r|") as tar:
        for member in tar:
            if not member.isfile():
                continue
            key, field = _key_and_field(member.name)
            if sample is not None and sample["__key__"] != key:
                yield sample
                sample = None
            if sample is None:
                sample = {"__key__": key, "__shard__": shard}
            sample[field] = tar.extractfile(member).read()
    if sample is not None:
        yield sample


class TarShardDataset(_data.IterableDataset):
    """Samples from tar shards (WebDataset layout). shards: a directory (every *.tar under
    it) or a list of paths. shuffle shuffles the shard order per epoch (set_epoch) with
    `seed`, identically on every rank; `transform(sample)` maps each sample dict."""

    def __init__(self, device, shards, *, shuffle=False, seed=0, transform=None,
                 chunk=8 << 20, readahead=2):
        self._conn = _Lazy(device if device is not None else stria.find_device())
        if isinstance(shards, str):
            shards = _list_files(self._conn.fs(), shards, [".tar"])
        self.shards = list(shards)
        self.shuffle = shuffle
        self.seed = seed
        self.epoch = 0
        self.transform = transform
        self.chunk = chunk
        self.readahead = readahead

    def set_epoch(self, epoch):
        self.epoch = epoch

    def my_shards(self):
        info = _data.get_worker_info()
        worker, workers = (info.id, info.num_workers) if info else (0, 1)
        rank, world = _rank_and_world()
        order = list(self.shards)
        if self.shuffle:
            random.Random(self.seed + self.epoch).shuffle(order)
        return shards_for(order, rank, world, worker, workers)

    def __iter__(self):
        fs = self._conn.fs()
        for shard in self.my_shards():
            reader = PrefetchReader(fs, shard, self.chunk, self.readahead)
            try:
                stream = io.BufferedReader(reader, 1 << 20)
                for sample in iterate_tar(stream, shard):
                    yield self.transform(sample) if self.transform else sample
            finally:
                reader.close()
