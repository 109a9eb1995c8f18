def run_copy(xs):
    return copy(xs)
