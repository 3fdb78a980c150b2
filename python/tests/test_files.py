"""stria.Filesystem and stria.File: interoperability with the mount, partial reads at
stripe boundaries, zero-copy readinto, the asynchronous queue, and bad input."""

import errno
import io
import os
import signal
import time

import pytest

import stria
from conftest import pattern


def test_written_natively_read_through_the_mount_and_back(fs, tmpdir_fs):
    d, m = tmpdir_fs
    data = pattern(3 * 1024 * 1024 + 17, seed=1)
    with fs.open(f"{d}/native.bin", "wb", stripe_count=4, stripe_size=64 * 1024) as f:
        f.write(data)
    with open(f"{m}/native.bin", "rb") as f:
        assert f.read() == data
    assert os.stat(f"{m}/native.bin").st_size == len(data)
    # And the other way: written through the mount, read natively.
    back = pattern(500_000, seed=2)
    with open(f"{m}/mounted.bin", "wb") as f:
        f.write(back)
    assert fs.read_bytes(f"{d}/mounted.bin") == back
    assert fs.stat(f"{d}/mounted.bin").st_size == len(back)
    assert sorted(fs.listdir(d)) == ["mounted.bin", "native.bin"]
    # Same permissions through both paths.
    os.chmod(f"{m}/mounted.bin", 0o640)
    assert fs.stat(f"{d}/mounted.bin").st_mode & 0o777 == 0o640


def test_partial_reads_at_stripe_boundaries(fs, tmpdir_fs):
    d, _ = tmpdir_fs
    stripe = 64 * 1024
    data = pattern(8 * stripe + 100, seed=3)
    fs.write_bytes(f"{d}/s", data, stripe_count=3, stripe_size=stripe)
    layout = fs.getstripe(f"{d}/s")
    assert layout["stripe_count"] == 3 and layout["stripe_size"] == stripe
    with fs.open(f"{d}/s", "rb", buffering=0) as f:
        for off in (0, stripe - 1, stripe, 2 * stripe - 7, 3 * stripe, len(data) - 50):
            for n in (1, 10, stripe, 2 * stripe + 3):
                assert f.pread(n, off) == data[off:off + n], (off, n)
        assert f.pread(100, len(data)) == b""
        assert f.pread(100, len(data) + 5000) == b""
        f.seek(-10, io.SEEK_END)
        assert f.read() == data[-10:]


def test_readinto_numpy_without_a_copy(fs, tmpdir_fs):
    np = pytest.importorskip("numpy")
    d, _ = tmpdir_fs
    data = pattern(1 << 20, seed=4)
    fs.write_bytes(f"{d}/n", data, stripe_count=2, stripe_size=64 * 1024)
    arr = np.zeros(1 << 20, dtype=np.uint8)
    with fs.open(f"{d}/n", "rb", buffering=0) as f:
        assert f.readinto(arr) == len(data)
    assert arr.tobytes() == data
    # A float32 view of the same memory works too (any contiguous buffer).
    floats = np.zeros(1024, dtype=np.float32)
    with fs.open(f"{d}/n", "rb", buffering=0) as f:
        assert f.readinto(floats) == 4096
    assert floats.tobytes() == data[:4096]


def test_text_append_seek_truncate(fs, tmpdir_fs):
    d, m = tmpdir_fs
    with fs.open(f"{d}/t.txt", "w") as f:
        f.write("hello\n")
    with fs.open(f"{d}/t.txt", "a") as f:
        f.write("world\n")
    with fs.open(f"{d}/t.txt") as f:
        assert f.readlines() == ["hello\n", "world\n"]
    with open(f"{m}/t.txt") as f:
        assert f.read() == "hello\nworld\n"
    with fs.open(f"{d}/t.txt", "r+b") as f:
        f.seek(6)
        f.write(b"W")
        f.truncate(8)
    assert fs.read_bytes(f"{d}/t.txt") == b"hello\nWo"
    with pytest.raises(FileExistsError):
        fs.open(f"{d}/t.txt", "x")


def test_queue_keeps_many_reads_in_flight(fs, tmpdir_fs):
    d, _ = tmpdir_fs
    data = pattern(4 << 20, seed=5)
    fs.write_bytes(f"{d}/q", data, stripe_count=4, stripe_size=64 * 1024)
    f = fs.open(f"{d}/q", "rb", buffering=0)
    import random
    rnd = random.Random(7)
    offsets = [rnd.randrange(0, len(data)) for _ in range(300)]
    bufs = {}
    seen = set()
    with fs.queue(64) as q:
        pending = list(enumerate(offsets))
        peak = 0
        while pending or q.outstanding():
            while pending:
                i, off = pending[0]
                buf = bytearray(4096)
                if not q.submit_read(f, off, buf, i):
                    break
                bufs[i] = buf
                pending.pop(0)
            peak = max(peak, q.outstanding())
            for i, n in q.complete(1, 64, timeout=10):
                assert i not in seen
                seen.add(i)
                off = offsets[i]
                assert n == min(4096, len(data) - off)
                assert bytes(bufs[i][:n]) == data[off:off + n]
    assert seen == set(range(len(offsets)))
    assert peak == 64
    f.close()


def test_bad_input_raises_oserror_with_errno(fs, tmpdir_fs):
    d, _ = tmpdir_fs
    with pytest.raises(FileNotFoundError) as e:
        fs.open(f"{d}/missing", "rb")
    assert e.value.errno == errno.ENOENT
    with pytest.raises(OSError) as e:
        fs.stat("relative/path")
    assert e.value.errno == errno.EINVAL
    with pytest.raises(OSError) as e:
        fs.mkdir("/" + "x" * 300)
    assert e.value.errno == errno.ENAMETOOLONG
    with pytest.raises(OSError) as e:
        fs.setstripe(f"{d}/bad", spec="-c 2 -S 1000")
    assert e.value.errno == errno.EINVAL
    with pytest.raises(ValueError):
        fs.open(f"{d}/x", "rw")
    f = fs.open(f"{d}/w", "wb", buffering=0)
    with pytest.raises(ValueError):
        f.pwrite(b"x", -1)
    with pytest.raises(OSError):
        f.seek(-5)
    f.close()
    with pytest.raises(ValueError):
        f.write(b"after close")
    with pytest.raises(ValueError):
        f.read()
    # ".." never leaves the filesystem: /../../etc/passwd is /etc/passwd inside it.
    with pytest.raises(FileNotFoundError):
        fs.stat("/../../etc/passwd")
    with pytest.raises(OSError) as e:
        stria.connect("not a device")
    assert e.value.errno == errno.EINVAL
    with pytest.raises(OSError) as e:
        fs.open(f"{d}/w", "rb", buffering=0).pwrite(b"x", 0)


def test_server_gone_is_an_errno_not_a_crash(tmpdir_fs):
    pids = [int(p) for p in os.environ.get("STRIA_TEST_PIDS", "").split(",") if p]
    if not pids:
        pytest.skip("daemon pids not given")
    d, _ = tmpdir_fs
    conn = stria.connect(os.environ["STRIA_DEVICE"], timeout=2)
    f = conn.open(f"{d}/gone", "wb", buffering=0)
    for p in pids:
        os.kill(p, signal.SIGSTOP)
    try:
        start = time.monotonic()
        with pytest.raises(OSError) as e:
            f.write(b"x" * 100)
        assert e.value.errno in (errno.ETIMEDOUT, errno.EIO, errno.ECONNREFUSED)
        with pytest.raises(OSError):
            conn.stat(d)
        assert time.monotonic() - start < 30
    finally:
        for p in pids:
            os.kill(p, signal.SIGCONT)
    f.close()
    conn.close()


def test_connect_without_a_device_finds_the_mount(tmp_path, monkeypatch, mount):
    # The mount's own line from /proc/mounts: stria.find_device reads that format.
    with open("/proc/mounts") as f:
        line = next(l for l in f if l.split()[1] == mount)
    assert line.split()[2] == "fuse.stria"
    mounts = tmp_path / "mounts"
    mounts.write_text("proc /proc proc rw 0 0\n" + line)
    monkeypatch.delenv("STRIA_DEVICE", raising=False)
    device = stria.find_device(mounts=str(mounts))
    assert device == line.split()[0]
    fsname = device.rsplit(":/", 1)[1]
    assert stria.find_device(fsname, mounts=str(mounts)) == device
    with pytest.raises(OSError):
        stria.find_device("no-such-fs", mounts=str(mounts))
    with stria.connect(device) as conn:
        assert conn.isdir("/")
    # Several mounts: the one holding the current directory wins, else /mnt/training-data.
    other = "10.9.9.9@tcp:/other /mnt/training-data fuse.stria rw 0 0\n"
    mounts.write_text(other + line)
    monkeypatch.chdir(mount)
    assert stria.find_device(mounts=str(mounts)) == device
    monkeypatch.chdir(tmp_path)
    assert stria.find_device(mounts=str(mounts)) == "10.9.9.9@tcp:/other"


def test_read_only_buffers_are_written_without_a_copy(fs, tmpdir_fs):
    from stria import _lib
    data = bytes(range(256)) * 4096
    base, _, _keep = _lib.buffer_address(data, writable=False)
    # A slice of bytes (what BufferedWriter and write_bytes pass) is used in place.
    addr, n, _keep2 = _lib.buffer_address(memoryview(data)[1000:], writable=False)
    assert (addr, n) == (base + 1000, len(data) - 1000)
    d, m = tmpdir_fs
    fs.write_bytes(f"{d}/ro", memoryview(data)[1000:])
    with open(f"{m}/ro", "rb") as f:
        assert f.read() == data[1000:]
