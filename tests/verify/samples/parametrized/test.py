class _Mark:
    """What pytest.mark.parametrize leaves on a function (pytest itself is not needed)."""

    def __init__(self, name, args):
        self.name = name
        self.args = args


def test_scale(n, factor):
    assert run(n, factor) == n * factor


test_scale.pytestmark = [_Mark("parametrize", ("n", [1, 2, 3])),
                         _Mark("parametrize", ("factor", [2, 5]))]


def test_helper_needs_args(x):
    raise AssertionError("a helper that takes arguments must not run as a test")
