"""stria.fsspec and stria.manifest."""

import hashlib
import os
import subprocess

import pytest

import stria
import stria.manifest


def test_fsspec_open_ls_and_mv(fs, tmpdir_fs):
    fsspec = pytest.importorskip("fsspec")
    import stria.fsspec  # noqa: F401  registers "stria"
    d, m = tmpdir_fs
    fsname = os.environ["STRIA_DEVICE"].rsplit(":/", 1)[1]
    url = f"stria://{fsname}{d}/table.csv"
    with fsspec.open(url, "w") as f:
        f.write("a,b\n1,2\n")
    with open(f"{m}/table.csv") as f:
        assert f.read() == "a,b\n1,2\n"
    sfs = fsspec.filesystem("stria", fsname=fsname)
    assert sfs.ls(d, detail=False) == [f"{d}/table.csv"]
    assert sfs.info(f"{d}/table.csv")["size"] == 8
    sfs.mv(f"{d}/table.csv", f"{d}/t2.csv")
    assert sfs.cat_file(f"{d}/t2.csv") == b"a,b\n1,2\n"
    sfs.makedirs(f"{d}/x/y", exist_ok=True)
    assert sfs.isdir(f"{d}/x/y")


def test_manifest_catches_flip_missing_and_extra(fs, tmpdir_fs):
    d, m = tmpdir_fs
    fs.makedirs(f"{d}/data/sub")
    files = {"a.bin": os.urandom(5000), "data/b.bin": os.urandom(300_000),
             "data/sub/c.bin": os.urandom(10)}
    for rel, blob in files.items():
        fs.write_bytes(f"{d}/{rel}", blob)
    text = stria.manifest.create(d, fs, jobs=4)
    expected = "".join(f"{hashlib.sha256(files[r]).hexdigest()}  {r}\n" for r in sorted(files))
    assert text == expected
    fs.write_bytes(f"{d}/MANIFEST", text.encode())
    assert stria.manifest.verify(f"{d}/MANIFEST", fs).ok
    # sha256sum reads the same file through the mount.
    r = subprocess.run(["sha256sum", "-c", "--quiet", "MANIFEST"], cwd=m, capture_output=True)
    assert r.returncode == 0, r.stdout + r.stderr
    # One flipped byte, one missing file, one extra file.
    with fs.open(f"{d}/data/b.bin", "r+b", buffering=0) as f:
        byte = f.pread(1, 1234)
        f.pwrite(bytes([byte[0] ^ 0x01]), 1234)
    fs.unlink(f"{d}/data/sub/c.bin")
    fs.write_bytes(f"{d}/data/new.bin", b"surprise")
    rep = stria.manifest.verify(f"{d}/MANIFEST", fs, jobs=3)
    assert not rep.ok
    assert rep.mismatched == ["data/b.bin"]
    assert rep.missing == ["data/sub/c.bin"]
    assert rep.extra == ["data/new.bin"]
