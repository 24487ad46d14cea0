"""Root conftest: makes the repository importable for tests run from a fresh clone.

Shared fixtures live in tests/conftest.py.
"""
