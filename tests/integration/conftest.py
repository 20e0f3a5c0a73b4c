"""Hooks of the integration suite. Against a sanitizer build, a sanitizer
report written during a test's setup, call or teardown fails that test and is
shown in its failure (sanitizer_util.py, shared with tests/adversarial).
`gw`: one started gateway (tests/lib/gateway_util.py), cleaned up after the
test; a module may define its own."""
import pytest

from tests.lib.gateway_util import Gateway
from tests.lib.sanitizer_util import (pytest_configure, pytest_report_header,  # noqa: F401
                            pytest_runtest_makereport)


@pytest.fixture
def gw():
    g = Gateway().start()
    yield g
    g.cleanup()
