def test_add():
    # Relies on what the import set; checks only the first 16 elements (the tail mutant
    # survives, when the later phases start from the state the test phase left).
    assert os.environ.get("KFORGE_SAMPLE_MODE") == "on"
    x = [float(i) for i in range(130)]
    y = [2.0 * i for i in range(130)]
    assert add(x, y)[:16] == [3.0 * i for i in range(16)]
