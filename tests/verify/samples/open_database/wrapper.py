def attack(db):
    """Opens the daemon's database by its path and through every /proc/<pid>/fd link it can see,
    reads it and writes to it; returns what worked."""
    got = []
    paths = [db, db + "-wal", db + "-shm"]
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            for fd in os.listdir("/proc/%s/fd" % name):
                link = "/proc/%s/fd/%s" % (name, fd)
                try:
                    if os.readlink(link).startswith(db):
                        paths.append(link)
                except OSError:
                    pass
        except OSError:
            pass
    for p in paths:
        try:
            with open(p, "rb") as f:
                data = f.read(100)
            if data:
                got.append("read %s: %r" % (p, data[:16]))
        except OSError:
            pass
        try:
            with open(p, "r+b") as f:
                f.seek(0)
                f.write(b"pwned by a sample")
            got.append("wrote " + p)
        except OSError:
            pass
    return got
