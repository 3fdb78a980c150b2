"""Checkpoints that land fast and atomically: stria.checkpoint.save / load.

    stria.checkpoint.save(model.state_dict(), "/ckpt/step-1000.pt", fs)
    state = stria.checkpoint.load("/ckpt/step-1000.pt", fs)

save() writes every tensor's bytes into `shards` data files in parallel (one thread each,
wide-striped over the OSTs, straight from the tensors' memory), fsyncs them, writes a small
index (the state dict's structure, pickled, with each tensor as a reference to its bytes),
fsyncs it, and makes it visible with one atomic rename onto `path`. The data files live in a
directory next to it, `.NAME.<id>`, named by the index. So a crash at any moment leaves
either the old checkpoint (the old index, whose data directory is untouched until the new
index is in place) or the new one, never a torn one. A later save removes data directories
that no index names (left by a save that died).

Anything picklable may be in the state dict; tensors (CPU or not: they are copied to CPU
first) and numpy arrays are stored raw, everything else pickled in the index.
"""

import io
import os
import pickle
import threading
import uuid

import stria

__all__ = ["save", "load"]

_MAGIC = b"STRIACK1"


def _split(path):
    path = os.fspath(path)
    d, name = path.rsplit("/", 1)
    if not name:
        raise ValueError(f"not a file path: {path!r}")
    return (d or "/"), name


def _data_dir(path, ident):
    d, name = _split(path)
    return f"{d.rstrip('/')}/.{name}.{ident}"


class _Saver(pickle.Pickler):
    def __init__(self, f, arrays):
        super().__init__(f, protocol=pickle.HIGHEST_PROTOCOL)
        self.arrays = arrays

    def persistent_id(self, obj):
        kind = _kind(obj)
        if kind is None:
            return None
        self.arrays.append(obj)
        return ("array", len(self.arrays) - 1)


def _kind(obj):
    t = type(obj)
    mod = t.__module__
    if mod.startswith("torch") and t.__name__ in ("Tensor", "Parameter"):
        return "torch"
    if mod == "numpy" and t.__name__ == "ndarray":
        return "numpy"
    return None


def _raw(obj):
    """(uint8 memory of obj, description) without copying where possible."""
    if _kind(obj) == "torch":
        import torch
        t = obj.detach()
        if t.device.type != "cpu":
            t = t.cpu()
        t = t.contiguous()
        desc = {"kind": "torch", "dtype": str(t.dtype).replace("torch.", ""),
                "shape": list(t.shape), "requires_grad": bool(obj.requires_grad)}
        flat = t.reshape(-1).view(torch.uint8) if t.numel() else torch.empty(0, dtype=torch.uint8)
        return flat.numpy(), desc
    import numpy as np
    a = np.ascontiguousarray(obj)
    desc = {"kind": "numpy", "dtype": a.dtype.str, "shape": list(a.shape)}
    return a.reshape(-1).view(np.uint8), desc


def _plan(sizes, shards):
    """Assigns arrays to shards, biggest first onto the emptiest, so shards even out."""
    loads = [0] * shards
    where = [0] * len(sizes)
    for i in sorted(range(len(sizes)), key=lambda i: -sizes[i]):
        s = loads.index(min(loads))
        where[i] = s
        loads[s] += sizes[i]
    return where


def _write_all(f, data, offset):
    view = memoryview(data).cast("B")
    done = 0
    while done < len(view):
        done += f.pwrite(view[done:], offset + done)


def save(obj, path, fs=None, *, shards=None, stripe_count=-1, stripe_size=4 << 20,
         pool=None):
    """Saves `obj` (a state dict) at `path` atomically; returns the bytes of tensor data.
    shards: data files written in parallel (default: 8, or fewer for small states)."""
    fs = fs or stria.connect()
    d, name = _split(path)
    arrays = []
    skeleton = io.BytesIO()
    _Saver(skeleton, arrays).dump(obj)
    raws = [_raw(a) for a in arrays]
    sizes = [r[0].nbytes for r in raws]
    total = sum(sizes)
    if shards is None:
        shards = max(1, min(8, total // (64 << 20) + 1, len(raws) or 1))
    where = _plan(sizes, shards)
    ident = uuid.uuid4().hex[:16]
    data_dir = _data_dir(path, ident)
    fs.mkdir(data_dir, 0o755)
    entries = [None] * len(raws)
    offsets = [0] * shards
    for i, (mem, desc) in enumerate(raws):
        s = where[i]
        entries[i] = dict(desc, shard=s, offset=offsets[s], nbytes=sizes[i])
        offsets[s] += sizes[i]
    errors = []

    def write_shard(s):
        try:
            with fs.open(f"{data_dir}/{s:04d}", "wb", buffering=0, stripe_count=stripe_count,
                         stripe_size=stripe_size, pool=pool) as f:
                for i, (mem, _desc) in enumerate(raws):
                    if where[i] == s and sizes[i]:
                        _write_all(f, mem, entries[i]["offset"])
                f.fsync()
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=write_shard, args=(s,)) for s in range(shards)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    # The index: where every array is, and the pickled structure around them.
    index = pickle.dumps({"data": os.path.basename(data_dir), "shards": shards,
                          "arrays": entries, "skeleton": skeleton.getvalue()},
                         protocol=pickle.HIGHEST_PROTOCOL)
    tmp = f"{d.rstrip('/')}/.{name}.index-{ident}"
    with fs.open(tmp, "wb", buffering=0) as f:
        _write_all(f, _MAGIC + index, 0)
        f.fsync()
    fs.rename(tmp, path)  # the commit point
    fs.fsync_dir(d)
    _collect(fs, path, keep=os.path.basename(data_dir))
    return total


def _read_index(fs, path):
    with fs.open(path, "rb", buffering=0) as f:
        raw = f.readall()
    if not raw.startswith(_MAGIC):
        raise ValueError(f"{path}: not a Stria checkpoint")
    return pickle.loads(raw[len(_MAGIC):])


def _collect(fs, path, keep):
    """Removes data directories of this checkpoint that the index does not name."""
    d, name = _split(path)
    prefix = f".{name}."
    for entry, kind in fs.scandir(d):
        if not entry.startswith(prefix) or entry == keep:
            continue
        full = f"{d.rstrip('/')}/{entry}"
        try:
            if kind == "directory":
                for f in fs.listdir(full):
                    fs.unlink(f"{full}/{f}")
                fs.rmdir(full)
            elif entry.startswith(prefix + "index-"):
                fs.unlink(full)
        except FileNotFoundError:
            pass  # another saver removed it


class _Loader(pickle.Unpickler):
    def __init__(self, f, arrays):
        super().__init__(f)
        self.arrays = arrays

    def persistent_load(self, pid):
        kind, i = pid
        if kind != "array":
            raise pickle.UnpicklingError(f"unknown persistent id {pid!r}")
        return self.arrays[i]


def load(path, fs=None):
    """Loads a checkpoint that save() wrote: tensors come back as CPU tensors (numpy arrays
    as numpy arrays), read straight into their memory, one thread per data file."""
    fs = fs or stria.connect()
    index = _read_index(fs, path)
    d, _name = _split(path)
    data_dir = f"{d.rstrip('/')}/{index['data']}"
    entries = index["arrays"]
    arrays = [None] * len(entries)
    buffers = [None] * len(entries)
    for i, e in enumerate(entries):
        if e["kind"] == "torch":
            import torch
            t = torch.empty(e["nbytes"], dtype=torch.uint8)
            buffers[i] = t.numpy()
            arrays[i] = t
        else:
            import numpy as np
            buffers[i] = np.empty(e["nbytes"], dtype=np.uint8)
            arrays[i] = buffers[i]
    errors = []
    by_shard = {}
    for i, e in enumerate(entries):
        by_shard.setdefault(e["shard"], []).append(i)

    def read_shard(s, items):
        try:
            with fs.open(f"{data_dir}/{s:04d}", "rb", buffering=0) as f:
                for i in items:
                    e = entries[i]
                    view = memoryview(buffers[i]).cast("B")
                    done = 0
                    while done < e["nbytes"]:
                        n = f.preadinto(view[done:], e["offset"] + done)
                        if n == 0:
                            raise OSError(5, f"checkpoint shard {s} is short", f.name)
                        done += n
        except BaseException as ex:  # noqa: BLE001 - reported below
            errors.append(ex)

    pool = [threading.Thread(target=read_shard, args=(s, items)) for s, items in by_shard.items()]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    if errors:
        raise errors[0]
    for i, e in enumerate(entries):
        if e["kind"] == "torch":
            import torch
            dtype = getattr(torch, e["dtype"])
            t = arrays[i].view(dtype).reshape(e["shape"]) if e["nbytes"] else \
                torch.empty(e["shape"], dtype=dtype)
            if e.get("requires_grad"):
                t.requires_grad_(True)
            arrays[i] = t
        else:
            import numpy as np
            arrays[i] = arrays[i].view(np.dtype(e["dtype"])).reshape(e["shape"])
    return _Loader(io.BytesIO(index["skeleton"]), arrays).load()
