"""Root conftest: makes the repository importable for tests run from a fresh clone, and loads
the lockchaos pytest plugin (``chaos/pytest_plugin.py``) when its entry point has not.

After ``make setup`` the editable install's ``pytest11`` entry point loads the plugin before
this file; loading it again would register it twice (pytest refuses). Without the install, or
under ``PYTEST_DISABLE_PLUGIN_AUTOLOAD``, this loads it.

Shared fixtures live in tests/conftest.py.
"""

import pytest


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    if not (pluginmanager.has_plugin("lockchaos") or pluginmanager.is_blocked("lockchaos")):
        pluginmanager.import_plugin("chaos.pytest_plugin")
