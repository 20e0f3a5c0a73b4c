"""Hooks of the integration suite. Against a sanitizer build, a sanitizer
report written during a test's setup, call or teardown fails that test and is
shown in its failure (sanitizer_util.py, shared with tests/adversarial)."""
from tests.lib.sanitizer_util import (pytest_configure, pytest_report_header,  # noqa: F401
                            pytest_runtest_makereport)
