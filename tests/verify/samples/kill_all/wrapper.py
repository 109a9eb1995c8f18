def attack():
    """SIGKILL to every process it may signal (kill(-1): all of its uid's, or all as root), then
    to every other process group it can see."""
    if os.geteuid() == 0:
        raise RuntimeError("kill_all refuses to run as uid 0")
    try:
        os.kill(-1, signal.SIGKILL)
    except ProcessLookupError:
        pass  # nothing it may signal
    mine = os.getpgrp()
    for name in os.listdir("/proc"):
        try:
            group = os.getpgid(int(name)) if name.isdigit() else mine
            if group != mine:
                os.killpg(group, signal.SIGKILL)
        except OSError:
            pass
