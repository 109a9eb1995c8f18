def hog():
    held = []
    while True:
        held.append(bytearray(16 * 1024 * 1024))
        time.sleep(0.002)
