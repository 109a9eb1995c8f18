"""A stub of triton.language for kforged_systemd_test.sh (see any.py)."""
from any import Any

constexpr = Any()


def __getattr__(name):
    return Any()
