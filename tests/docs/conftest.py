"""The documentation-site test runs after the notebooks: ``pytest`` runs tests/ before notebooks/, and
the site is built from the executed copies the notebooks' run leaves in build/notebooks-executed/
(notebooks/conftest.py). Run on its own, the test executes whatever notebook has no fresh copy."""

from __future__ import annotations

import pytest

HERE = "tests/docs/test_docs_site.py"


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    last = [item for item in items if item.nodeid.startswith(HERE)]
    if last:
        items[:] = [item for item in items if not item.nodeid.startswith(HERE)] + last
