"""Reports and requests on the pool's pipes."""

import json
import os
import sys

from .guard import GUARD

# The writer's own references, taken before any sample runs (a replaced json.dumps or os.write
# in their modules is then found by the guard, not used to write its finding).
_dumps = json.dumps
_write = os.write


def write_report(fd, report):
    """One report as one line of JSON. Once the guard is armed (the sample was about to run),
    it looks once more for replaced functions and the report carries what it found
    ("integrity")."""
    if GUARD.armed:
        GUARD.check("report")
        report["integrity"] = GUARD.report()
    data = (_dumps(report, default=str) + "\n").encode("utf-8", "replace")
    view = memoryview(data)
    while view:
        try:
            n = _write(fd, view)
        except InterruptedError:
            continue
        except OSError:
            return
        view = view[n:]


def put_first_on_path(paths):
    for p in reversed(paths):
        if p not in sys.path:
            sys.path.insert(0, p)


def _bad_request(report, result_fd, e):
    report.update(verdict="error", phase="request", detail="cannot read request: %s" % e)
    write_report(result_fd, report)
    os._exit(2)


def _read_json(path, report, result_fd):
    GUARD.out_fd = result_fd  # the sample's process: the guard's lines go on its result pipe
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        _bad_request(report, result_fd, e)



def flush_std():
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except Exception:
        pass



def read_all(fd):
    data = b""
    while True:
        try:
            chunk = os.read(fd, 1 << 16)
        except InterruptedError:
            continue
        if not chunk:
            return data
        data += chunk

