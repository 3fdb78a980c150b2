"""stria.torch datasets and stria.checkpoint, with Debian's python3-torch."""

import collections
import io
import os
import random
import signal
import subprocess
import sys
import tarfile
import textwrap
import time

import pytest

torch = pytest.importorskip("torch")

import stria  # noqa: E402
import stria.checkpoint  # noqa: E402
from stria.torch import FileDataset, TarShardDataset, shards_for  # noqa: E402


def _make_shards(fs, d, shards, per_shard):
    keys = []
    for s in range(shards):
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            for i in range(per_shard):
                key = f"s{s:02d}/{i:05d}"
                keys.append(key)
                for ext, payload in (("jpg", os.urandom(1000 + i)), ("cls", str(i % 10).encode())):
                    info = tarfile.TarInfo(f"{key}.{ext}")
                    info.size = len(payload)
                    tar.addfile(info, io.BytesIO(payload))
        fs.write_bytes(f"{d}/shard-{s:03d}.tar", buf.getvalue(), stripe_count=2)
    return keys


def test_dataloader_two_workers_sees_every_sample_once_per_epoch(fs, tmpdir_fs):
    d, _ = tmpdir_fs
    keys = _make_shards(fs, d, shards=5, per_shard=40)
    ds = TarShardDataset(os.environ["STRIA_DEVICE"], d, shuffle=True, seed=3, chunk=64 * 1024)
    assert len(ds.shards) == 5
    for epoch in range(2):
        ds.set_epoch(epoch)
        loader = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=2)
        seen = collections.Counter()
        for sample in loader:
            seen[sample["__key__"]] += 1
            assert set(sample) >= {"jpg", "cls"}
            assert int(sample["cls"]) == int(sample["__key__"][-5:]) % 10
        assert sorted(seen) == sorted(keys)
        assert set(seen.values()) == {1}


def test_shards_split_across_ranks_and_workers():
    shards = [f"/s{i}" for i in range(11)]
    parts = [shards_for(shards, r, 2, w, 3) for r in range(2) for w in range(3)]
    flat = [s for p in parts for s in p]
    assert sorted(flat) == sorted(shards) and len(flat) == len(set(flat))


def test_file_dataset_reads_small_files(fs, tmpdir_fs):
    d, m = tmpdir_fs
    fs.mkdir(f"{d}/imgs")
    blobs = {}
    for i in range(30):
        blobs[f"{d}/imgs/{i:03d}.jpg"] = os.urandom(100 * 1024 + i)
        fs.write_bytes(f"{d}/imgs/{i:03d}.jpg", blobs[f"{d}/imgs/{i:03d}.jpg"])
    ds = FileDataset(os.environ["STRIA_DEVICE"], f"{d}/imgs", transform=lambda b, p: (p, b))
    assert len(ds) == 30
    loader = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=2)
    got = dict(loader)
    assert got == blobs


def test_checkpoint_round_trip(fs, tmpdir_fs):
    d, m = tmpdir_fs
    state = {
        "model": {"w": torch.randn(300, 200), "b": torch.arange(7, dtype=torch.int64),
                  "h": torch.randn(5, 5).to(torch.bfloat16), "empty": torch.empty(0, 3)},
        "step": 1234,
        "opt": [{"lr": 0.1, "m": torch.ones(10)}],
        "name": "run-1",
    }
    nbytes = stria.checkpoint.save(state, f"{d}/ckpt.pt", fs, shards=3)
    assert nbytes == 300 * 200 * 4 + 7 * 8 + 25 * 2 + 40
    back = stria.checkpoint.load(f"{d}/ckpt.pt", fs)
    assert back["step"] == 1234 and back["name"] == "run-1"
    for k in ("w", "b", "h", "empty"):
        assert back["model"][k].dtype == state["model"][k].dtype
        assert torch.equal(back["model"][k], state["model"][k])
    assert torch.equal(back["opt"][0]["m"], torch.ones(10))
    # Saving again replaces it and removes the old data directory.
    state["step"] = 1235
    stria.checkpoint.save(state, f"{d}/ckpt.pt", fs)
    assert stria.checkpoint.load(f"{d}/ckpt.pt", fs)["step"] == 1235
    hidden = [n for n in fs.listdir(d) if n.startswith(".ckpt.pt.")]
    assert len(hidden) == 1
    # The checkpoint is visible through the mount, with its data files.
    assert os.path.isfile(f"{m}/ckpt.pt") and os.path.isdir(f"{m}/{hidden[0]}")


_WRITER = textwrap.dedent("""
    import sys, torch, stria, stria.checkpoint
    fs = stria.connect(sys.argv[1])
    path = sys.argv[2]
    step = 0
    while True:
        step += 1
        state = {"step": step, "a": torch.full((256, 1024), float(step)),
                 "b": torch.full((300_000,), step, dtype=torch.int32)}
        stria.checkpoint.save(state, path, fs, shards=4)
        print(step, flush=True)
""")


def test_checkpoint_killed_at_random_moments_is_always_loadable(fs, tmpdir_fs):
    d, _ = tmpdir_fs
    path = f"{d}/live.pt"
    stria.checkpoint.save({"step": 0, "a": torch.zeros(256, 1024),
                           "b": torch.zeros(300_000, dtype=torch.int32)}, path, fs)
    rnd = random.Random(11)
    interrupted = 0
    for _round in range(4):
        proc = subprocess.Popen([sys.executable, "-c", _WRITER, os.environ["STRIA_DEVICE"], path],
                                stdout=subprocess.PIPE, text=True)
        # Let it get going (torch import), then kill it at a random moment of a save.
        first = proc.stdout.readline()
        assert first.strip(), "the writer did not save once"
        time.sleep(rnd.uniform(0.0, 0.6))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        # A save cut short leaves a second data directory (or an unrenamed index) behind.
        leftovers = [n for n in fs.listdir(d) if n.startswith(".live.pt.")]
        interrupted += len(leftovers) > 1
        state = stria.checkpoint.load(path, fs)
        step = state["step"]
        assert step >= 1
        assert torch.equal(state["a"], torch.full((256, 1024), float(step)))
        assert torch.equal(state["b"], torch.full((300_000,), step, dtype=torch.int32))
    # The kills landed inside saves, not only between them.
    assert interrupted >= 1
    # The next save collects what the killed ones left.
    stria.checkpoint.save({"step": -1}, path, fs)
    assert [n for n in fs.listdir(d) if n.startswith(".live.pt.")] != []
    assert len([n for n in fs.listdir(d) if n.startswith(".live.pt.")]) == 1


def test_the_documented_dataloader_example_runs(fs):
    example = os.path.join(os.path.dirname(__file__), "..", "examples", "dataloader_example.py")
    r = subprocess.run([sys.executable, example, os.environ["STRIA_DEVICE"]],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "epoch 1: 256 samples" in r.stdout
    assert fs.isfile("/examples/model.pt")
    # docs/python.md shows this very file.
    doc = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "python.md")
    with open(doc) as d, open(example) as e:
        assert e.read() in d.read()
