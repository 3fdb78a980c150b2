"""A complete DataLoader over tar shards on Stria (docs/python.md shows this file).

    python3 dataloader_example.py [DEVICE]      # DEVICE: e.g. 10.0.0.5@tcp:/training;
                                                # without it, the mounted filesystem's

It writes 4 shards of 64 samples (a 32x32 RGB "image" and a label each, WebDataset layout)
under /examples/shards, then trains a tiny classifier on them for 2 epochs with a
DataLoader of 2 workers, reading every shard through the native path.
"""

import io
import sys
import tarfile

import torch
from torch import nn

import stria
from stria.torch import TarShardDataset

device = sys.argv[1] if len(sys.argv) > 1 else None
fs = stria.connect(device)

# 1. Publish a small dataset: 4 tar shards, striped over every OST.
fs.makedirs("/examples/shards", exist_ok=True)
gen = torch.Generator().manual_seed(0)
for s in range(4):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for i in range(64):
            label = (s * 64 + i) % 10
            image = torch.randint(0, 256, (3, 32, 32), dtype=torch.uint8, generator=gen)
            image[label % 3] = 255 - label * 20        # something learnable
            for ext, payload in (("rgb", image.numpy().tobytes()), ("cls", str(label).encode())):
                info = tarfile.TarInfo(f"{s:02d}{i:04d}.{ext}")
                info.size = len(payload)
                tar.addfile(info, io.BytesIO(payload))
    fs.write_bytes(f"/examples/shards/shard-{s:03d}.tar", buf.getvalue(), stripe_count=-1)


# 2. Decode each sample into tensors.
def decode(sample):
    image = torch.frombuffer(bytearray(sample["rgb"]), dtype=torch.uint8).view(3, 32, 32)
    return image.float() / 255.0, int(sample["cls"])


# 3. Train: every sample once per epoch, shards split across the 2 workers.
ds = TarShardDataset(fs.device, "/examples/shards", shuffle=True, seed=0, transform=decode)
loader = torch.utils.data.DataLoader(ds, batch_size=32, num_workers=2)
model = nn.Sequential(nn.Flatten(), nn.Linear(3 * 32 * 32, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    ds.set_epoch(epoch)
    seen = 0
    for images, labels in loader:
        loss = nn.functional.cross_entropy(model(images), labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
        seen += len(labels)
    print(f"epoch {epoch}: {seen} samples, loss {loss.item():.3f}")
    assert seen == 4 * 64

# 4. Checkpoint it, atomically.
import stria.checkpoint  # noqa: E402
stria.checkpoint.save(model.state_dict(), "/examples/model.pt", fs)
model.load_state_dict(stria.checkpoint.load("/examples/model.pt", fs))
print("saved and reloaded /examples/model.pt")
