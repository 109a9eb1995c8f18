def run(x):
    return shape_of(x)
