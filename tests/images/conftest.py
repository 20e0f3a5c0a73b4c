# Fixtures of the images layer: the four archives built once per session by
# scripts/build-images into a temporary directory (and a second, independent
# build for the reproducibility test), images unpacked on demand, and the
# kube layer's real control plane for the gateway image (re-exported, one
# environment per run either way). Missing tools skip, or fail under CI=true.
import os, shutil, tempfile

import pytest

from tests.lib import image_util as iu
from tests.lib.layers import fixture_from

kube = fixture_from("kube", "kube")


@pytest.fixture(scope="session")
def scratch():
    """A temporary directory for the whole session, removed at its end."""
    d = tempfile.mkdtemp(prefix="openshell-images-")
    yield d
    shutil.rmtree(d, ignore_errors=True)


def _build(scratch, name):
    iu.require_tools()
    out = os.path.join(scratch, name)
    digests = iu.build_images(out)
    assert sorted(digests) == sorted(f"openshell-{n}.tar" for n in iu.NAMES), digests
    return out, digests


@pytest.fixture(scope="session")
def built(scratch):
    """(directory, {archive: digest}) of one `scripts/build-images` run."""
    return _build(scratch, "first")


@pytest.fixture(scope="session")
def rebuilt(scratch, built):
    """A second, independent build of the same checkout."""
    return _build(scratch, "second")


@pytest.fixture(scope="session")
def unpacked(scratch, built):
    """unpacked(name) -> (rootfs, config) of docker.io/openshell/NAME:dev,
    unpacked once; callers that change a rootfs ask for a fresh copy."""
    cache = {}

    def get(name, fresh=False):
        key = (name, fresh and len(cache))
        if key not in cache:
            dest = tempfile.mkdtemp(prefix=f"unpack-{name}-", dir=scratch)
            cache[key] = iu.unpack(os.path.join(built[0], f"openshell-{name}.tar"),
                                   iu.refs(name)[1], dest)
        return cache[key]
    return get
