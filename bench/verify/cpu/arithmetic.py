def poly_@ID@(x):
    return @SCALE@ * x * x + 3 * x + 1
# ---- kernel_wrapper ----
def run_poly(xs):
    return [poly_@ID@(x) for x in xs]
# ---- unitest_code ----
def test_poly():
    xs = list(range(200))
    assert run_poly(xs) == [@SCALE@ * x * x + 3 * x + 1 for x in xs]
