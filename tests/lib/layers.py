"""Sharing fixtures between pytest layers: a layer that needs another
layer's fixture (the kube layer's control plane, say) loads that layer's
conftest under its own module name and re-exports the fixture."""
import importlib.util, os

from tests.lib.build import TESTS


def fixture_from(layer, name):
    """The fixture NAME defined in tests/LAYER/conftest.py."""
    spec = importlib.util.spec_from_file_location(f"openshell_{layer}_conftest",
                                                  os.path.join(TESTS, layer, "conftest.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return getattr(mod, name)
