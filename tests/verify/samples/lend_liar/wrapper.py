def run_add(a, b):
    return add(a, b)
