def copy(xs):
    return list(reversed(xs))
