# The helm test layer uses the same real control plane as tests/kube: this
# re-exports its session fixture `kube` (one environment per run either way).
from tests.lib.layers import fixture_from

kube = fixture_from("kube", "kube")
