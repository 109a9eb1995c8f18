"""A stub of torch for kforged_systemd_test.sh (see any.py)."""
from any import Any

__version__ = "0.0-stub"


def __getattr__(name):
    return Any()
