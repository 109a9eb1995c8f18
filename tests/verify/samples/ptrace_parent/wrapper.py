PTRACE_ATTACH = 16
PTRACE_DETACH = 17


def attack():
    """PTRACE_ATTACH to its parent and to every other process it can see; returns those that
    let it."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
    targets = {os.getppid()}
    for name in os.listdir("/proc"):
        if name.isdigit() and int(name) != os.getpid():
            targets.add(int(name))
    attached = []
    for pid in sorted(t for t in targets if t > 0):
        if libc.ptrace(PTRACE_ATTACH, pid, None, None) == 0:
            attached.append(pid)
            os.waitpid(pid, getattr(os, "__WALL", 0x40000000))
            libc.ptrace(PTRACE_DETACH, pid, None, None)
    print("parent:", os.getppid(), "targets:", sorted(targets))
    return attached
