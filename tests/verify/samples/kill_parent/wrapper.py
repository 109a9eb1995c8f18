def attack():
    os.kill(os.getppid(), signal.SIGKILL)
