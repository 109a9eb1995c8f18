def run(n, factor):
    return scale(n, factor)
