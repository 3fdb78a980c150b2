"""Stria's native client for Python: files on a Stria filesystem without the mount.

    import stria
    fs = stria.connect("10.0.0.5@tcp:/training")    # or stria.connect(): the mounted one
    with fs.open("/shards/000001.tar", "rb") as f:  # behaves like Python's open()
        header = f.read(512)
    buf = bytearray(1 << 20)
    with fs.open("/shards/000002.tar", "rb", buffering=0) as f:
        n = f.readinto(buf)                         # straight into your buffer, no copy
    fs.setstripe("/checkpoints", stripe_count=-1, stripe_size=16 << 20)

Bytes go between your buffers and the OSTs directly (libstria.so, the C API); the MDS checks
permissions with this process's uid and groups, as for the mount, and a file written here
is the same file through the mount. Errors are OSError subclasses with the errno
(FileNotFoundError, PermissionError, ...). Submodules: stria.torch (datasets),
stria.checkpoint (atomic, parallel checkpoints), stria.fsspec (an fsspec filesystem),
stria.manifest (dataset integrity manifests).
"""

import io
import itertools
import os
import stat as _stat
import threading

from . import _lib
from ._lib import lib as _c

__all__ = ["connect", "Filesystem", "File", "Queue", "find_device"]
__version__ = "0.1.0"

_DT_DIR, _DT_REG, _DT_LNK = 4, 8, 10
DEFAULT_BUFFER = 1 << 20


DEFAULT_MOUNT = "/mnt/training-data"


def _unescape(field):
    """A /proc/mounts field: octal escapes (\\040 for a space) decoded."""
    import re
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def find_device(fsname=None, mounts="/proc/mounts"):
    """The device (`NID:/fsname`) of a mounted Stria filesystem: $STRIA_DEVICE, else from
    the stria mounts in /proc/mounts (only those of `fsname` when given): the one holding
    the current directory, else the one at /mnt/training-data, else the first."""
    env = os.environ.get("STRIA_DEVICE")
    if env and (fsname is None or env.endswith(":/" + fsname)):
        return env
    found = []  # (mount point, device)
    try:
        with open(mounts) as f:
            for line in f:
                parts = line.split()
                if len(parts) < 3 or not parts[2].startswith("fuse.stria"):
                    continue
                dev = _unescape(parts[0])
                if ":/" in dev and (fsname is None or dev.endswith(":/" + fsname)):
                    found.append((_unescape(parts[1]), dev))
    except OSError:
        pass
    if found:
        try:
            cwd = os.getcwd()
        except OSError:
            cwd = ""
        inside = [(mp, d) for mp, d in found if cwd == mp or cwd.startswith(mp.rstrip("/") + "/")]
        if inside:
            return max(inside, key=lambda x: len(x[0]))[1]
        for mp, d in found:
            if mp == DEFAULT_MOUNT:
                return d
        return found[0][1]
    what = f"filesystem '{fsname}'" if fsname else "Stria filesystem"
    raise OSError(19, f"no mounted {what} found; pass a device such as "
                      "'10.0.0.5@tcp:/training' or set STRIA_DEVICE")


def connect(device=None, *, timeout=60.0, io_threads=16, dentry_ttl=1.0, key_file=None):
    """Connects to the filesystem `device` ("NID[,NID...]:/fsname"); without one, to the
    mounted filesystem (find_device). timeout: seconds a request keeps retrying a server
    that is away before it fails. key_file: the cluster key (docs/security.md); None: the
    file named by $STRIA_KEY_FILE, else /etc/stria/stria.key if it exists, else no key.
    A missing or wrong key raises PermissionError ("authentication failed: ...")."""
    return Filesystem(device if device is not None else find_device(), timeout=timeout,
                      io_threads=io_threads, dentry_ttl=dentry_ttl, key_file=key_file)


def _stat_result(st):
    ns = (st.atime_ns, st.mtime_ns, st.ctime_ns)
    return os.stat_result((st.mode, st.ino, 0, st.nlink, st.uid, st.gid, st.size,
                           ns[0] // 10**9, ns[1] // 10**9, ns[2] // 10**9,
                           ns[0] / 1e9, ns[1] / 1e9, ns[2] / 1e9,
                           4096, st.blocks, 0, ns[0], ns[1], ns[2]))


def _layout_struct(stripe_count=None, stripe_size=None, stripe_offset=None, pool=None,
                   spec=None):
    if all(v is None for v in (stripe_count, stripe_size, stripe_offset, pool, spec)):
        return None
    l = _lib.Layout()
    l.stripe_count = 0 if stripe_count is None else int(stripe_count)
    l.stripe_size = 0 if stripe_size is None else int(stripe_size)
    l.stripe_offset = -1 if stripe_offset is None else int(stripe_offset)
    l.pool = pool.encode() if pool else None
    l.spec = spec.encode() if spec else None
    return l


class _Closing:
    """close() on leaving a with block and when collected."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


class Filesystem(_Closing):
    """One connection to a Stria filesystem. Thread-safe. Not inherited across fork():
    a child process (a DataLoader worker) connects again (stria.torch does it for you)."""

    def __init__(self, device, *, timeout=60.0, io_threads=16, dentry_ttl=1.0, key_file=None):
        opts = _lib.ConnectOpts()
        opts.struct_size = _lib.ctypes.sizeof(opts)
        opts.timeout_ms = int(timeout * 1000)
        opts.io_threads = int(io_threads)
        opts.dentry_ttl_ms = int(dentry_ttl * 1000)
        opts.key_file = os.fsencode(key_file) if key_file is not None else None
        handle = _lib.c_void_p()
        _lib.check(_c.stria_connect(_lib.encode(device), _lib.ctypes.byref(opts),
                                    _lib.ctypes.byref(handle)), device)
        self._h = handle
        self.device = device
        self._pid = os.getpid()
        self._lock = threading.Lock()

    def _handle(self):
        if self._h is None:
            raise ValueError("I/O operation on a closed Stria filesystem")
        if os.getpid() != self._pid:
            raise RuntimeError("a Stria connection does not survive fork(): connect again "
                               "in the child process")
        return self._h

    def close(self):
        with self._lock:
            if self._h is not None and os.getpid() == self._pid:
                _c.stria_disconnect(self._h)
            self._h = None

    def __repr__(self):
        return f"<stria.Filesystem {self.device!r}{' closed' if self._h is None else ''}>"

    # ---- namespace ----

    def stat(self, path, *, follow_symlinks=True):
        st = _lib.Stat()
        fn = _c.stria_stat if follow_symlinks else _c.stria_lstat
        _lib.check(fn(self._handle(), _lib.encode(path), _lib.ctypes.byref(st)), path)
        return _stat_result(st)

    def lstat(self, path):
        return self.stat(path, follow_symlinks=False)

    def exists(self, path):
        try:
            self.stat(path)
            return True
        except FileNotFoundError:
            return False

    def isdir(self, path):
        try:
            return _stat.S_ISDIR(self.stat(path).st_mode)
        except FileNotFoundError:
            return False

    def isfile(self, path):
        try:
            return _stat.S_ISREG(self.stat(path).st_mode)
        except FileNotFoundError:
            return False

    def mkdir(self, path, mode=0o755, *, exist_ok=False):
        rc = _c.stria_mkdir(self._handle(), _lib.encode(path), mode)
        if rc < 0 and not (exist_ok and -rc == 17 and self.isdir(path)):
            _lib.check(rc, path)

    def makedirs(self, path, mode=0o755, *, exist_ok=False):
        parts = [p for p in os.fspath(path).split("/") if p]
        cur = ""
        for i, part in enumerate(parts):
            cur += "/" + part
            last = i == len(parts) - 1
            self.mkdir(cur, mode, exist_ok=exist_ok or not last)

    def rmdir(self, path):
        _lib.check(_c.stria_rmdir(self._handle(), _lib.encode(path)), path)

    def unlink(self, path):
        _lib.check(_c.stria_unlink(self._handle(), _lib.encode(path)), path)

    remove = unlink

    def rename(self, src, dst, *, noreplace=False):
        """Atomic: dst, if it exists, is replaced in one step (as os.replace)."""
        flags = 1 if noreplace else 0
        _lib.check(_c.stria_rename(self._handle(), _lib.encode(src), _lib.encode(dst), flags),
                   src)

    replace = rename

    def symlink(self, target, path):
        _lib.check(_c.stria_symlink(self._handle(), _lib.encode(target), _lib.encode(path)),
                   path)

    def truncate(self, path, size):
        _lib.check(_c.stria_truncate(self._handle(), _lib.encode(path), int(size)), path)

    def fsync_dir(self, path):
        """Every namespace change answered so far is durable on the MDS."""
        _lib.check(_c.stria_fsync_dir(self._handle(), _lib.encode(path)), path)

    def scandir(self, path):
        """[(name, type)] with type 'file', 'directory', 'link' or 'other'."""
        d = _lib.c_void_p()
        _lib.check(_c.stria_opendir(self._handle(), _lib.encode(path), _lib.ctypes.byref(d)),
                   path)
        out = []
        try:
            ent = _lib.Dirent()
            while _lib.check(_c.stria_readdir(d, _lib.ctypes.byref(ent)), path) == 1:
                kind = {_DT_DIR: "directory", _DT_REG: "file", _DT_LNK: "link"}.get(
                    ent.type, "other")
                out.append((ent.name.decode("utf-8", "surrogateescape"), kind))
        finally:
            _c.stria_closedir(d)
        return out

    def listdir(self, path="/"):
        return [name for name, _ in self.scandir(path)]

    def walk(self, top="/"):
        """As os.walk, top-down: (dirpath, dirnames, filenames)."""
        dirs, files = [], []
        for name, kind in self.scandir(top):
            (dirs if kind == "directory" else files).append(name)
        yield top, dirs, files
        for d in dirs:
            yield from self.walk(top.rstrip("/") + "/" + d)

    # ---- layouts ----

    def getstripe(self, path):
        """A file's layout, or a directory's default, as a dict in Lustre's words:
        lcm_layout_gen, composite, and components (each with lcme_id, lcme_flags,
        lcme_extent.e_start/e_end, lmm_pattern, lmm_stripe_count, lmm_stripe_size,
        lmm_stripe_offset, lmm_pool, objects)."""
        info = _lib.LayoutInfo()
        _lib.check(_c.stria_getstripe(self._handle(), _lib.encode(path),
                                      _lib.ctypes.byref(info)), path)
        comps = []
        for i in range(info.component_count):
            c = info.comp[i]
            comps.append({
                "lcme_id": c.id,
                "lcme_flags": "init" if c.flags & _lib.COMP_INIT else "0",
                "lcme_extent.e_start": c.start,
                "lcme_extent.e_end": c.end,
                "lmm_pattern": {1: "raid0", 2: "mdt"}.get(c.pattern, str(c.pattern)),
                "lmm_stripe_count": c.stripe_count,
                "lmm_stripe_size": c.stripe_size,
                "lmm_stripe_offset": c.stripe_offset,
                "lmm_pool": c.pool.decode(),
                "objects": c.object_count,
            })
        first = comps[0] if comps else {}
        return {
            "lcm_layout_gen": info.generation,
            "composite": bool(info.composite),
            "components": comps,
            "stripe_count": first.get("lmm_stripe_count", 0),
            "stripe_size": first.get("lmm_stripe_size", 0),
            "pool": first.get("lmm_pool", ""),
        }

    def setstripe(self, path, *, stripe_count=None, stripe_size=None, stripe_offset=None,
                  pool=None, spec=None):
        """lfs setstripe: a directory's default layout, or a new empty file with this
        layout (FileExistsError for an existing file). spec takes lfs setstripe's options
        as one string: "-E 64K -L mdt -E -1 -c 4"."""
        l = _layout_struct(stripe_count, stripe_size, stripe_offset, pool, spec)
        if l is None:
            raise ValueError("setstripe needs a layout option")
        _lib.check(_c.stria_setstripe(self._handle(), _lib.encode(path),
                                      _lib.ctypes.byref(l)), path)

    # ---- files ----

    def open(self, path, mode="r", buffering=-1, encoding=None, errors=None, newline=None, *,
             stripe_count=None, stripe_size=None, pool=None, layout=None, sync=False):
        """As Python's open(): modes r, w, a, x with + and b/t. buffering=0 gives the raw
        File (binary only). stripe_count/stripe_size/pool/layout (lfs setstripe options as
        one string) set the layout of a file this call creates. sync=True opens O_SYNC."""
        raw = File(self, path, mode, sync=sync,
                   layout=_layout_struct(stripe_count, stripe_size, None, pool, layout))
        binary = "b" in mode
        if buffering == 0:
            if not binary:
                raw.close()
                raise ValueError("can't have unbuffered text I/O")
            return raw
        size = DEFAULT_BUFFER if buffering in (-1, 1) else buffering
        if raw.readable() and raw.writable():
            buffered = io.BufferedRandom(raw, size)
        elif raw.writable():
            buffered = io.BufferedWriter(raw, size)
        else:
            buffered = io.BufferedReader(raw, size)
        if binary:
            return buffered
        text = io.TextIOWrapper(buffered, encoding or "utf-8", errors, newline,
                                line_buffering=buffering == 1)
        text.mode = mode
        return text

    def read_bytes(self, path):
        with self.open(path, "rb", buffering=0) as f:
            return f.readall()

    def write_bytes(self, path, data, **layout):
        with self.open(path, "wb", buffering=0, **layout) as f:
            view = memoryview(data).cast("B")
            done = 0
            while done < len(view):
                done += f.write(view[done:])

    def queue(self, depth=32):
        """An asynchronous I/O queue (Queue) that keeps up to `depth` requests in flight."""
        return Queue(self, depth)


_O = {"r": os.O_RDONLY, "w": os.O_WRONLY | os.O_CREAT | os.O_TRUNC,
      "a": os.O_WRONLY | os.O_CREAT | os.O_APPEND, "x": os.O_WRONLY | os.O_CREAT | os.O_EXCL}


def _flags(mode):
    kinds = [c for c in mode if c in "rwax"]
    if len(kinds) != 1 or any(c not in "rwaxbt+" for c in mode) or ("b" in mode and "t" in mode):
        raise ValueError(f"invalid mode: '{mode}'")
    flags = _O[kinds[0]]
    if "+" in mode:
        flags = (flags & ~(os.O_WRONLY | os.O_RDONLY)) | os.O_RDWR
    return flags


class File(io.RawIOBase):
    """A raw file on Stria (io.RawIOBase): read, readinto (into any writable buffer:
    bytearray, numpy array, memoryview, without a copy), write, seek, tell, truncate,
    pread/pwrite at an offset (no shared position: safe from many threads), fsync."""

    def __init__(self, fs, path, mode="rb", *, sync=False, layout=None):
        super().__init__()
        self._fs = fs
        self.name = os.fspath(path)
        self.mode = mode
        flags = _flags(mode)
        if sync:
            flags |= os.O_SYNC
        self._flags = flags
        h = _lib.c_void_p()
        _lib.check(_c.stria_open(fs._handle(), _lib.encode(path), flags, 0o666,
                                 _lib.ctypes.byref(layout) if layout is not None else None,
                                 _lib.ctypes.byref(h)), self.name)
        self._h = h
        self._pos = 0
        self._append = bool(flags & os.O_APPEND)

    def _handle(self):
        if self._h is None:
            raise ValueError("I/O operation on closed file.")
        return self._h

    def readable(self):
        self._handle()
        return (self._flags & 3) != os.O_WRONLY

    def writable(self):
        self._handle()
        return (self._flags & 3) != os.O_RDONLY

    def seekable(self):
        return True

    def fileno(self):
        raise io.UnsupportedOperation("a Stria file has no descriptor (use the mount)")

    def pread(self, size, offset):
        """Up to `size` bytes at `offset` (short only at the end of the file)."""
        if size < 0 or offset < 0:
            raise ValueError("negative size or offset")
        buf = bytearray(size)
        n = self.preadinto(buf, offset)
        del buf[n:]
        return bytes(buf)

    def preadinto(self, buf, offset):
        if offset < 0:
            raise ValueError("negative offset")
        if not self.readable():
            raise io.UnsupportedOperation("not readable")
        addr, n, keep = _lib.buffer_address(buf, writable=True)
        if n == 0:
            return 0
        return _lib.check(_c.stria_pread(self._handle(), addr, n, offset), self.name)

    def pwrite(self, data, offset):
        if offset < 0:
            raise ValueError("negative offset")
        if not self.writable():
            raise io.UnsupportedOperation("not writable")
        addr, n, keep = _lib.buffer_address(data, writable=False)
        if n == 0:
            return 0
        return _lib.check(_c.stria_pwrite(self._handle(), addr, n, offset), self.name)

    def readinto(self, buf):
        n = self.preadinto(buf, self._pos)
        self._pos += n
        return n

    def readall(self):
        size = _c.stria_file_size(self._handle())
        out = bytearray(max(0, size - self._pos))
        n = self.preadinto(out, self._pos) if out else 0
        self._pos += n
        del out[n:]
        rest = super().readall() if n == len(out) else b""  # grew meanwhile
        return bytes(out) + (rest or b"")

    def write(self, data):
        if self._append:
            self._pos = _c.stria_file_size(self._handle())
        n = self.pwrite(data, self._pos)
        self._pos += n
        return n

    def seek(self, offset, whence=io.SEEK_SET):
        self._handle()
        if whence == io.SEEK_SET:
            pos = offset
        elif whence == io.SEEK_CUR:
            pos = self._pos + offset
        elif whence == io.SEEK_END:
            pos = _c.stria_file_size(self._h) + offset
        else:
            raise ValueError(f"invalid whence ({whence})")
        if pos < 0:
            raise OSError(22, "Invalid argument: negative seek position", self.name)
        self._pos = pos
        return pos

    def tell(self):
        self._handle()
        return self._pos

    def truncate(self, size=None):
        size = self._pos if size is None else size
        if size < 0:
            raise OSError(22, "Invalid argument: negative size", self.name)
        _lib.check(_c.stria_ftruncate(self._handle(), int(size)), self.name)
        return size

    def fsync(self):
        """Data durable on every OST, size and mtime on the MDS."""
        _lib.check(_c.stria_fsync(self._handle()), self.name)

    def size(self):
        return _c.stria_file_size(self._handle())

    def stat(self):
        st = _lib.Stat()
        _lib.check(_c.stria_fstat(self._handle(), _lib.ctypes.byref(st)), self.name)
        return _stat_result(st)

    def close(self):
        if self._h is not None:
            h, self._h = self._h, None
            try:
                if self._fs._h is not None and os.getpid() == self._fs._pid:
                    _lib.check(_c.stria_close(h), self.name)
            finally:
                super().close()
        else:
            super().close()

    @property
    def closed(self):
        return self._h is None

    def __repr__(self):
        return f"<stria.File name={self.name!r} mode={self.mode!r}>"


class Queue(_Closing):
    """Asynchronous reads and writes (libstria's IoQueue): submit many, reap completions.

        q = fs.queue(64)
        q.submit_read(f, offset, buf, tag)     # f: a File (buffering=0), buf: writable
        for tag, result in q.complete(min_complete=1):
            ...                                # result: bytes, or raises on error

    Buffers must stay alive until their completion is reaped (the Queue keeps a reference).
    """

    def __init__(self, fs, depth=32):
        h = _lib.c_void_p()
        _lib.check(_c.stria_queue_create(fs._handle(), int(depth), _lib.ctypes.byref(h)))
        self._h = h
        self._fs = fs
        self._keep = {}
        self._ids = itertools.count(1)
        self.depth = depth

    def _submit(self, op, f, offset, buf, tag, writable):
        if offset < 0:
            raise ValueError("negative offset")
        addr, n, keep = _lib.buffer_address(buf, writable) if buf is not None else (None, 0, None)
        uid = next(self._ids)
        io_ = _lib.Io(op, f._handle(), offset, addr, n, uid)
        taken = _c.stria_queue_submit(self._h, _lib.ctypes.byref(io_), 1)
        if taken == -11:
            return False
        _lib.check(taken)
        self._keep[uid] = (tag, keep, f)
        return True

    def submit_read(self, f, offset, buf, tag=None):
        """Queues a read into buf; False when the queue is full (reap first)."""
        return self._submit(_lib.OP_READ, f, offset, buf, tag, True)

    def submit_write(self, f, offset, data, tag=None):
        return self._submit(_lib.OP_WRITE, f, offset, data, tag, False)

    def submit_fsync(self, f, tag=None):
        return self._submit(_lib.OP_FSYNC, f, 0, None, tag, False)

    def complete(self, min_complete=1, max_complete=64, timeout=None):
        """[(tag, bytes_transferred)]; a failed request raises its OSError (after the
        others of the batch were recorded as done)."""
        out = (_lib.Completion * max_complete)()
        ms = -1 if timeout is None else int(timeout * 1000)
        n = _lib.check(_c.stria_queue_complete(self._h, out, min_complete, max_complete, ms))
        done, failure = [], None
        for i in range(n):
            tag, keep, f = self._keep.pop(out[i].user_data)
            if out[i].result < 0 and failure is None:
                failure = _lib.error(out[i].result, getattr(f, "name", None))
            done.append((tag, out[i].result))
        if failure is not None:
            raise failure
        return done

    def outstanding(self):
        return len(self._keep)

    def close(self):
        if self._h is not None:
            _c.stria_queue_destroy(self._h)
            self._h = None
            self._keep.clear()
