# The helm test layer uses the same real control plane as tests/kube: this
# re-exports its session fixture `kube` (one environment per run either way).
import importlib.util, os

_spec = importlib.util.spec_from_file_location(
    "openshell_kube_conftest",
    os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "kube", "conftest.py"))
_mod = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_mod)
kube = _mod.kube
