"""A stub of triton.runtime for kforged_systemd_test.sh (see any.py)."""
