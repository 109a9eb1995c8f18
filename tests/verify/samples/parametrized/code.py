def scale(n, factor):
    return n * factor
