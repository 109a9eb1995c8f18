def fill():
    block = b"x" * (1024 * 1024)
    with open("big.bin", "wb") as f:
        for _ in range(100000):
            f.write(block)
