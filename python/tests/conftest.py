"""Fixtures for the Python package's tests, run against a real cluster and mount.

tests/python_test.cc (CTest: python_test) starts the daemons and the mount and runs pytest
with STRIA_DEVICE (the MGS device), STRIA_TEST_MOUNT (where it is mounted), STRIA_LIBRARY
(this build's libstria.so) and STRIA_TEST_PIDS (the daemons' pids, for the test that makes
the servers go away). Without them every test is skipped.
"""

import os
import uuid

import pytest

DEVICE = os.environ.get("STRIA_DEVICE")
MOUNT = os.environ.get("STRIA_TEST_MOUNT")


def pytest_collection_modifyitems(config, items):
    if DEVICE and MOUNT:
        return
    skip = pytest.mark.skip(reason="no cluster: run through CTest (python_test)")
    for item in items:
        item.add_marker(skip)


@pytest.fixture(scope="session")
def fs():
    import stria
    with stria.connect(DEVICE, timeout=30) as conn:
        yield conn


@pytest.fixture(scope="session")
def mount():
    return MOUNT


@pytest.fixture
def tmpdir_fs(fs):
    """A fresh directory in the filesystem: (its fs path, its path through the mount)."""
    name = f"/t-{uuid.uuid4().hex[:10]}"
    fs.mkdir(name)
    return name, MOUNT + name


def pattern(n, seed=0):
    """n bytes, different at every offset and for every seed."""
    import random
    rnd = random.Random(seed)
    return rnd.randbytes(n)
