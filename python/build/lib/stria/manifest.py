"""Dataset integrity manifests: the SHA-256 of every file, in `sha256sum` format.

    text = stria.manifest.create("/datasets/imagenet", fs)       # what lfs manifest create prints
    report = stria.manifest.verify("/datasets/imagenet/MANIFEST", fs)
    assert report.ok, report

A manifest lists `<sha256 hex>  <path relative to its directory>`, sorted by path, one line
per regular file, so `sha256sum -c MANIFEST` run in the mounted directory checks it too.
verify() reads every listed file in parallel through the native path and reports missing
files, files that differ, and files present under the directory but not listed (extra);
the manifest itself is never extra. `lfs manifest create/verify` does the same from the shell.
"""

import hashlib
import threading
from concurrent.futures import ThreadPoolExecutor

import stria

__all__ = ["create", "verify", "Report"]

_CHUNK = 4 << 20


def _sha256(fs, path, buf):
    h = hashlib.sha256()
    with fs.open(path, "rb", buffering=0) as f:
        view = memoryview(buf)
        while True:
            n = f.readinto(view)
            if not n:
                break
            h.update(view[:n])
    return h.hexdigest()


def _files(fs, root):
    root = root.rstrip("/") or "/"
    out = []
    for dirpath, _dirs, files in fs.walk(root):
        rel_dir = dirpath[len(root):].lstrip("/")
        for name in files:
            rel = f"{rel_dir}/{name}" if rel_dir else name
            full = f"{dirpath.rstrip('/')}/{name}"
            if fs.isfile(full):
                out.append(rel)
    return sorted(out)


def _hash_all(fs, root, rels, jobs):
    local = threading.local()

    def one(rel):
        if not hasattr(local, "buf"):
            local.buf = bytearray(_CHUNK)
        try:
            return rel, _sha256(fs, f"{root.rstrip('/')}/{rel}", local.buf)
        except FileNotFoundError:
            return rel, None

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        return dict(pool.map(one, rels))


def create(root, fs=None, *, jobs=8, exclude=()):
    """The manifest text for every regular file under `root` (paths relative to it)."""
    fs = fs or stria.connect()
    rels = [r for r in _files(fs, root) if r not in set(exclude)]
    sums = _hash_all(fs, root, rels, jobs)
    return "".join(f"{sums[r]}  {r}\n" for r in rels if sums[r] is not None)


def parse(text):
    """{path: sha256} from manifest text; ValueError names a malformed line."""
    out = {}
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        digest, sep, rel = line.partition("  ")
        if not sep or len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
            raise ValueError(f"manifest line {n} is not '<sha256>  <path>': {line!r}")
        out[rel.lstrip("*")] = digest
    return out


class Report:
    def __init__(self, checked, missing, mismatched, extra):
        self.checked = checked
        self.missing = missing
        self.mismatched = mismatched
        self.extra = extra

    @property
    def ok(self):
        return not (self.missing or self.mismatched or self.extra)

    def __repr__(self):
        return (f"Report(checked={self.checked}, missing={self.missing}, "
                f"mismatched={self.mismatched}, extra={self.extra})")


def verify(manifest, fs=None, *, root=None, jobs=8):
    """Checks the files a manifest lists (under `root`, by default the manifest's own
    directory) and returns a Report; report.ok when every file matches and none is extra."""
    fs = fs or stria.connect()
    with fs.open(manifest, "r") as f:
        expected = parse(f.read())
    if root is None:
        root = manifest.rsplit("/", 1)[0] or "/"
    manifest_rel = manifest[len(root.rstrip("/")) + 1:] if manifest.startswith(root) else None
    present = set(_files(fs, root))
    listed = sorted(expected)
    sums = _hash_all(fs, root, [r for r in listed if r in present], jobs)
    missing = [r for r in listed if r not in present or sums.get(r) is None]
    mismatched = [r for r in listed if sums.get(r) is not None and sums[r] != expected[r]]
    extra = sorted(present - set(expected) - {manifest_rel})
    return Report(len(listed), missing, mismatched, extra)
