def run():
    return broken()
