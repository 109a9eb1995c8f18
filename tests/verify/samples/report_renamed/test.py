# A harness whose report names a field otherwise than report_fields.txt declares: "detail" sent
# as "details", past the harness's own check (its writer replaced). The pool must not read the
# report with defaults: its verdict is an infrastructure error naming the field.
import json
import sys


def _renamed(report):
    report = dict(report)
    report["details"] = report.pop("detail", "")
    return json.dumps(report, default=str)


def test_add():
    sys.modules["kforge_harness.pipes"].checked_report = _renamed
    assert run_add(2, 3) == 5
