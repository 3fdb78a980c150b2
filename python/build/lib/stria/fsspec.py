"""An fsspec filesystem for Stria: `stria://FSNAME/path` without the mount.

    import fsspec, pandas
    with fsspec.open("stria://training/tables/part-0.parquet", "rb") as f:
        df = pandas.read_parquet(f)

The URL's host is the filesystem name; the MGS is found from $STRIA_DEVICE or from a
mounted Stria filesystem of that name (stria.find_device), or given as
StriaFileSystem(device="10.0.0.5@tcp:/training"). Registered with fsspec under "stria" on
import, and through the package's fsspec.specs entry point.
"""

import stat as _stat

import fsspec
from fsspec.spec import AbstractFileSystem

import stria

__all__ = ["StriaFileSystem"]


class StriaFileSystem(AbstractFileSystem):
    protocol = "stria"
    root_marker = "/"

    def __init__(self, fsname=None, device=None, **kwargs):
        super().__init__(**kwargs)
        self._device = device or stria.find_device(fsname)
        self._fs = None
        self._pid = None

    @property
    def fs(self):
        import os
        if self._fs is None or self._pid != os.getpid():
            self._fs = stria.connect(self._device)
            self._pid = os.getpid()
        return self._fs

    @classmethod
    def _strip_protocol(cls, path):
        if isinstance(path, list):
            return [cls._strip_protocol(p) for p in path]
        path = str(path)
        if path.startswith("stria://"):
            rest = path[len("stria://"):]
            path = "/" + rest.split("/", 1)[1] if "/" in rest else "/"
        if not path.startswith("/"):
            path = "/" + path
        return path.rstrip("/") or "/"

    @staticmethod
    def _get_kwargs_from_urls(path):
        if str(path).startswith("stria://"):
            host = str(path)[len("stria://"):].split("/", 1)[0]
            if host:
                return {"fsname": host}
        return {}

    def _info_of(self, path, st):
        kind = "directory" if _stat.S_ISDIR(st.st_mode) else (
            "file" if _stat.S_ISREG(st.st_mode) else "other")
        return {"name": path, "size": st.st_size if kind == "file" else 0, "type": kind,
                "mode": st.st_mode, "mtime": st.st_mtime, "ino": st.st_ino}

    def info(self, path, **kwargs):
        path = self._strip_protocol(path)
        return self._info_of(path, self.fs.stat(path))

    def ls(self, path, detail=True, **kwargs):
        path = self._strip_protocol(path)
        st = self.fs.stat(path)
        if not _stat.S_ISDIR(st.st_mode):
            entries = [self._info_of(path, st)]
        else:
            base = path.rstrip("/")
            entries = []
            for name, _kind in self.fs.scandir(path):
                full = f"{base}/{name}"
                try:
                    entries.append(self._info_of(full, self.fs.stat(full)))
                except FileNotFoundError:
                    continue  # removed while listing
        return entries if detail else [e["name"] for e in entries]

    def _open(self, path, mode="rb", block_size=None, autocommit=True, cache_options=None,
              **kwargs):
        path = self._strip_protocol(path)
        return self.fs.open(path, mode, buffering=block_size or -1)

    def mkdir(self, path, create_parents=True, **kwargs):
        path = self._strip_protocol(path)
        if create_parents:
            self.fs.makedirs(path, exist_ok=True)
        else:
            self.fs.mkdir(path)

    def makedirs(self, path, exist_ok=False):
        self.fs.makedirs(self._strip_protocol(path), exist_ok=exist_ok)

    def rmdir(self, path):
        self.fs.rmdir(self._strip_protocol(path))

    def rm_file(self, path):
        self.fs.unlink(self._strip_protocol(path))

    def _rm(self, path):
        path = self._strip_protocol(path)
        if self.fs.isdir(path):
            self.fs.rmdir(path)
        else:
            self.fs.unlink(path)

    def mv(self, path1, path2, recursive=False, maxdepth=None, **kwargs):
        self.fs.rename(self._strip_protocol(path1), self._strip_protocol(path2))

    def cp_file(self, path1, path2, **kwargs):
        with self.fs.open(self._strip_protocol(path1), "rb") as src, \
                self.fs.open(self._strip_protocol(path2), "wb") as dst:
            while True:
                chunk = src.read(8 << 20)
                if not chunk:
                    break
                dst.write(chunk)

    def created(self, path):
        return self.info(path)["mtime"]

    def modified(self, path):
        import datetime
        return datetime.datetime.fromtimestamp(self.info(path)["mtime"])


fsspec.register_implementation("stria", StriaFileSystem, clobber=True)
