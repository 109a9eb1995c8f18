def test_shape():
    run([1, 2])
