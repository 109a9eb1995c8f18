def nothing_@ID@():
    return @SCALE@
# ---- kernel_wrapper ----
def run():
    return nothing_@ID@()
# ---- unitest_code ----
def test_trivial():
    assert run() == @SCALE@
