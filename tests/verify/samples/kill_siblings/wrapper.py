def attack():
    """SIGKILL to every live process it can see, except itself; returns those that took it."""
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
            killed.append("%s %s" % (name, what))
        except OSError:
            pass
    return killed
