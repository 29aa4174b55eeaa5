"""Fixtures shared by the integration tests (tests/conftest.py holds the suite-wide ones)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest


@pytest.fixture
def policy_path(policy_file: Callable[..., Path]) -> Path:
    """The test policy under the basic accountant: the ledger's sums are exact, so a test can
    compare a statement's charge with the sum of its releases. A module may define its own."""
    return policy_file(accountant="basic")
