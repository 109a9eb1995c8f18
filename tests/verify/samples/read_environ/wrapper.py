def attack(key):
    """Reads every /proc/<pid>/environ it can (its own included) looking for the API key."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/environ" % name, "rb") as f:
                if key.encode() in f.read():
                    found.append(name)
        except OSError:
            pass
    if key in repr(dict(os.environ)):
        found.append("own environment")
    return found
