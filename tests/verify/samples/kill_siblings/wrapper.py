def attack():
    """SIGKILL to every live process it can see, except itself; returns those that died of it.
    Refuses to run as uid 0: outside a sandbox that would be every process of the machine."""
    if os.geteuid() == 0:
        raise RuntimeError("kill_siblings refuses to run as uid 0")
    killed = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open("/proc/%s/stat" % name) as f:
                if f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X"):
                    continue  # a zombie: nothing left to kill
            with open("/proc/%s/cmdline" % name, "rb") as f:
                what = f.read().replace(b"\0", b" ").decode(errors="replace")[:200]
        except OSError:
            what = "?"
        try:
            os.kill(int(name), signal.SIGKILL)
        except OSError:
            continue
        if died(int(name)):
            killed.append("%s %s" % (name, what))
    return killed


def died(pid):
    """Whether pid is gone (or a zombie) within a second: a signal the kernel accepted but
    dropped (PID 1 of a namespace) killed nothing."""
    for _ in range(100):
        try:
            with open("/proc/%d/stat" % pid) as f:
                if f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X"):
                    return True
        except OSError:
            return True
        time.sleep(0.01)
    return False
