"""Shared helpers of the pytest layers (integration, adversarial, kube, helm).

Imported as `from tests.lib import build` / `from tests.lib.gateway_util
import Gateway`: the repository root is on sys.path through pytest.ini's
`pythonpath = .`, never through sys.path edits. Fixtures stay in the layers'
conftest.py files; this package holds plain functions and classes."""
