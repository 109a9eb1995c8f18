def attack():
    """SIGKILL to every process whose command line mentions kforge (but itself); prints and
    returns those that died of it."""
    if os.geteuid() == 0:
        raise RuntimeError("kill_kforge refuses to run as uid 0")
    seen, killed = [], []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open("/proc/%s/cmdline" % name, "rb") as f:
                what = f.read().replace(b"\0", b" ").decode(errors="replace")[:200]
        except OSError:
            continue
        if "kforge" not in what:
            continue
        seen.append("%s %s" % (name, what))
        try:
            os.kill(int(name), signal.SIGKILL)
        except OSError:
            continue
        if died(int(name)):
            killed.append("%s %s" % (name, what))
    print("kforge processes seen:", seen)
    return killed


def died(pid):
    for _ in range(100):
        try:
            with open("/proc/%d/stat" % pid) as f:
                if f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X"):
                    return True
        except OSError:
            return True
        time.sleep(0.01)
    return False
