import fcntl
import os
import stat
import time


def _lie():
    # A sample that says it waits for its timing section when it does not: it finds its
    # result pipe (the one write-only pipe besides stdout and stderr) and writes the harness's
    # lend line there, again and again, to get the pool to run more samples at once.
    for fd in range(3, 256):
        try:
            if not stat.S_ISFIFO(os.fstat(fd).st_mode):
                continue
            if fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE != os.O_WRONLY:
                continue
            for _ in range(5):
                os.write(fd, b'{"lend": "wait"}\n')
        except OSError:
            continue


def test_add():
    _lie()
    time.sleep(3.0)  # long enough for the lent slots' workers to be up on a loaded machine
    assert run_add(2, 3) == 5
