def attack():
    # In a PID namespace the parent is outside it (getppid() says 0): PID 1 stands in for it.
    os.kill(os.getppid() or 1, signal.SIGKILL)
