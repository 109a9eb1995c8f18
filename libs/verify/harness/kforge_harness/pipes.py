"""Reports and requests on the pool's pipes."""

from __future__ import annotations

import json
import os
import sys
from typing import Any, NoReturn

from . import report_schema
from .guard import GUARD
from .shapes import Json

# The writer's own references, taken before any sample runs (a replaced json.dumps or os.write
# in their modules is then found by the guard, not used to write its finding).
_dumps = json.dumps
_loads = json.loads
_write = os.write


def checked_report(report: Json) -> str:
    """The report as it goes out: JSON text of one line. A report that breaks its declared fields
    (report_fields.txt) goes out as an error report of phase "harness" naming the field, so the
    pool never reads a field it does not know as a default."""
    try:
        text = _dumps(report, default=str, allow_nan=False)
        bad = report_schema.violation(_loads(text))
    except ValueError as e:  # NaN or infinity, which JSON has no word for
        bad = "holds a number JSON cannot carry (%s)" % e
    if bad is None:
        return text
    error: Json = {"harness": report_schema.VERSION, "pid": os.getpid(),
                   "verdict": report_schema.VERDICT.error,
                   "phase": "harness", "detail": "harness error: report field %s" % bad}
    if "integrity" in report:
        error["integrity"] = report["integrity"]
    return _dumps(error, default=str)


def write_report(fd: int, report: Json) -> None:
    """One report as one line of JSON. Once the guard is armed (the sample was about to run),
    it looks once more for replaced functions and the report carries what it found
    ("integrity")."""
    if GUARD.armed:
        GUARD.check("report")
        report["integrity"] = GUARD.report()
    data = (checked_report(report) + "\n").encode("utf-8", "replace")
    view = memoryview(data)
    while view:
        try:
            n = _write(fd, view)
        except InterruptedError:
            continue
        except OSError:
            return
        view = view[n:]


def put_first_on_path(paths: list[str]) -> None:
    for p in reversed(paths):
        if p not in sys.path:
            sys.path.insert(0, p)


def bad_request(report: Json, result_fd: int, e: BaseException) -> NoReturn:
    report.update(verdict=report_schema.VERDICT.error, phase="request",
                  detail="cannot read request: %s" % e)
    write_report(result_fd, report)
    os._exit(2)


def read_json(path: str, report: Json, result_fd: int) -> Any:
    GUARD.out_fd = result_fd  # the sample's process: the guard's lines go on its result pipe
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        bad_request(report, result_fd, e)


def flush_std() -> None:
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except Exception:
        pass


def read_all(fd: int) -> bytes:
    data = b""
    while True:
        try:
            chunk = os.read(fd, 1 << 16)
        except InterruptedError:
            continue
        if not chunk:
            return data
        data += chunk

