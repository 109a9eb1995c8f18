def test_cache_key_computed_before_the_sample():
    from triton.runtime.cache import triton_key

    # The worker hashed Triton once before it forked: the sample finds the key cached, and its
    # first compile (which asks for the key) does not hash again.
    before = triton_key.cache_info()
    assert before.currsize == 1, before
    x = [1.0, 2.0]
    assert add(x, x) == [2.0, 4.0]
    after = triton_key.cache_info()
    assert after.misses == before.misses and after.hits == before.hits + 1, (before, after)
