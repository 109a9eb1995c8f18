def spin():
    while True:
        pass
