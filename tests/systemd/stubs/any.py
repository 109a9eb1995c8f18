# Test stubs for kforged_systemd_test.sh hostile, on machines without torch and Triton: just
# enough for a corpus kernel and its generated wrapper to import, so that a hostile sample's own
# code runs in the verifier. They compute nothing; no verdict here is "passed".


class Any:
    """Every attribute, call, index and operation gives another Any; false in a condition."""

    def __init__(self, *args, **kwargs):
        pass

    def __call__(self, *args, **kwargs):
        if len(args) == 1 and callable(args[0]) and not kwargs:
            return args[0]  # used as a decorator
        return Any()

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return Any()

    def __getitem__(self, key):
        return Any()

    def __bool__(self):
        return False

    def __iter__(self):
        return iter(())

    def __len__(self):
        return 0

    def __index__(self):
        return 0

    def __int__(self):
        return 0

    def __float__(self):
        return 0.0

    def _op(self, *args):
        return Any()

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = _op
    __rtruediv__ = __floordiv__ = __rfloordiv__ = __mod__ = __pow__ = __neg__ = _op
    __and__ = __or__ = __xor__ = __lshift__ = __rshift__ = __invert__ = __matmul__ = _op
    __lt__ = __le__ = __gt__ = __ge__ = _op
