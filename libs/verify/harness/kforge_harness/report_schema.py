"""The report's declared fields (report_fields.txt, the file the pool compiles in): read once,
and every report checked against them before it is written (pipes.write_report). The pool parses
the same file the same way (libs/verify/src/harness_report.cpp). The worker's events on its
control channel are declared the same way in worker_events.txt (event_violation), and the pool's
messages to it in worker_ops.txt (op_violation; the pool's side of both:
libs/verify/include/kforge/verify/worker_event.hpp), with what the pool writes for a prestarted
sample process itself: its prep.json and the request on its request pipe (file_violation)."""

from __future__ import annotations

import os
from typing import Any, Callable, Iterable, Optional

from .listed import listed

# A parsed type: ("union", [alternatives], nullable); an alternative: ("int",), ("object",
# open), ("list", element or None), ("map", element) or ("name", names).
Type = tuple[Any, ...]
Alt = tuple[Any, ...]

SCALARS = ("int", "number", "bool", "string", "any")
WRITERS = ("start", "request", "sandbox", "prestart", "run", "timing", "gpu_lock",
           "cross_compile", "differential", "bounds", "mutants", "battery", "kernel_battery", "worker",
           "pool")


class Field:
    """One declared field: its path, type (parsed), whether required, and its writer."""

    def __init__(self, path: str, type_text: str, required: bool, writer: str) -> None:
        self.path = path
        self.type_text = type_text
        self.type = parse_type(type_text, path)
        self.required = required
        self.writer = writer


def parse_type(text: str, where: str) -> Type:
    """A type as a tuple: ("union", [alternatives], nullable). Each alternative is ("int",),
    ("object", open), ("list", element or None) or ("map", element). Raises ValueError."""
    nullable = text.endswith("?")
    body = text[:-1] if nullable else text
    alts: list[Alt] = []
    for alt in split_top(body, "|"):
        alts.append(parse_alt(alt, where))
    return ("union", alts, nullable)


def split_top(text: str, sep: str) -> list[str]:
    """text split at `sep` outside angle brackets."""
    out: list[str] = []
    depth, cur = 0, ""
    for c in text:
        depth += c == "<"
        depth -= c == ">"
        if c == sep and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += c
    out.append(cur)
    return out


def parse_alt(alt: str, where: str) -> Alt:
    if alt in SCALARS:
        return (alt,)
    if alt in ("object", "object+"):
        return ("object", alt == "object+")
    if alt == "list":
        return ("list", None)
    if alt.startswith("name<") and alt.endswith(">"):
        return ("name", frozenset(vocabulary(alt[5:-1])))
    for kind in ("list", "map"):
        if alt.startswith(kind + "<") and alt.endswith(">"):
            return (kind, parse_type(alt[len(kind) + 1:-1], where))
    raise ValueError("report_fields.txt: %s: '%s' is not a type" % (where, alt))


def vocabulary(name: str) -> list[str]:
    """The names of vocabulary/NAME.txt (the verdicts, flags, target results, stage kinds), the
    files C++ and SQL read too (store/vocabulary.hpp, migrations/0024_vocabulary.sql)."""
    return listed(os.path.join("vocabulary", name + ".txt"), __file__)


def load(lines: Iterable[str], file: str = "report_fields.txt",
         fds: Optional[dict[str, int]] = None,
         files: Optional[list[str]] = None) -> tuple[int, dict[str, Field]]:
    """(version, {path: Field}) from the file's entries. Raises ValueError on a malformed one.
    `fds`: where a file of messages (worker_ops.txt) puts its `fds OP N` lines, and `files` its
    `file NAME` lines (a top-level entry that is not a message); None: none."""
    version: Optional[int] = None
    fields: dict[str, Field] = {}
    for line in lines:
        parts = line.split()
        if parts[0] == "version" and len(parts) == 2:
            version = int(parts[1])
            continue
        if parts[0] == "fds" and len(parts) == 3 and fds is not None:
            fds[parts[1]] = int(parts[2])
            continue
        if parts[0] == "file" and len(parts) == 2 and files is not None:
            files.append(parts[1])
            continue
        if len(parts) != 4 or parts[2] not in ("required", "optional") or parts[3] not in WRITERS:
            raise ValueError("%s: not PATH TYPE PRESENCE WRITER: %r" % (file, line))
        if parts[0] in fields:
            raise ValueError("%s: %s is declared twice" % (file, parts[0]))
        fields[parts[0]] = Field(parts[0], parts[1], parts[2] == "required", parts[3])
    if version is None:
        raise ValueError("%s: no version line" % file)
    return version, fields


class Declaration:
    """One declaration file: its version and fields, and what its objects are called in a
    message ("the report", "the event")."""

    def __init__(self, file: str, of: str, with_fds: bool = False) -> None:
        self.file = file
        self.of = of
        self.fds: dict[str, int] = {}  # op -> the descriptors its message carries (worker_ops.txt)
        self.files: list[str] = []  # its top-level entries that are not messages (`file NAME`)
        self.version, self.fields = load(listed(file, __file__), file,
                                         self.fds if with_fds else None,
                                         self.files if with_fds else None)
        if with_fds:
            for name in self.files:
                if name not in children("", self):
                    raise ValueError("%s: `file %s` declares no fields" % (file, name))
            for name in children("", self):
                if name not in self.fds and name not in self.files:
                    raise ValueError("%s: no `fds %s N` line" % (file, name))

    def ops(self) -> list[str]:
        """The top-level entries that are messages (worker_ops.txt: not its `file` entries)."""
        return [n for n in children("", self) if n not in self.files]


class Names:
    """The names of one vocabulary file as attributes: VERDICT.passed == "passed"; a name the
    file does not hold is an AttributeError where it is used, not a report C++ refuses later."""

    def __init__(self, name: str) -> None:
        self.vocabulary = name
        self.names = frozenset(vocabulary(name))

    def __getattr__(self, attr: str) -> str:
        if attr in self.__dict__.get("names", ()):
            return attr
        raise AttributeError("'%s' is not in vocabulary/%s.txt" % (attr, self.vocabulary))


def children(prefix: str, decl: Optional[Declaration] = None) -> dict[str, Field]:
    """The fields declared directly under `prefix` ("" for the top level): {name: Field}."""
    out: dict[str, Field] = {}
    for path, f in (decl or REPORT).fields.items():
        if prefix and not path.startswith(prefix):
            continue
        rest = path[len(prefix):]
        if rest and "." not in rest:
            out[rest] = f
    return out


REPORT = Declaration("report_fields.txt", "the report")
EVENTS = Declaration("worker_events.txt", "the event")
OPS = Declaration("worker_ops.txt", "the message", with_fds=True)
VERSION, FIELDS = REPORT.version, REPORT.fields

VERDICT = Names("verdicts")
TARGET_RESULT = Names("target_results")
SPEED_FLAG = Names("speed_flags")


def type_name(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int):
        return "int"
    if isinstance(v, float):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "list"
    if isinstance(v, dict):
        return "object"
    return type(v).__name__


def check_value(value: Any, typ: Type, shown: str, decl: str, type_text: str,
                writer_ok: Callable[[Field], bool],
                declaration: Declaration = REPORT) -> Optional[str]:
    """The first violation in `value` against type `typ`, or None. shown: where it is, as a
    message says it (tests[0].where); decl: its declared path (tests[].where)."""
    _, alts, nullable = typ
    if value is None:  # `any` takes null too
        if nullable or any(alt[0] == "any" for alt in alts):
            return None
        return "%s: is null, declared %s" % (shown, type_text)
    for alt in alts:
        if not matches(value, alt):
            continue
        kind = alt[0]
        if kind == "object":
            return check_object(value, shown, decl, alt[1], writer_ok, declaration)
        if kind == "list" and alt[1] is not None:
            for i, item in enumerate(value):
                bad = check_value(item, alt[1], "%s[%d]" % (shown, i), decl + "[]",
                                  element_text(alt[1]), writer_ok, declaration)
                if bad:
                    return bad
        if kind == "map":
            for key, item in value.items():
                bad = check_value(item, alt[1], "%s{%s}" % (shown, key), decl + "{}",
                                  element_text(alt[1]), writer_ok, declaration)
                if bad:
                    return bad
        return None
    return "%s: is %s, declared %s" % (shown, type_name(value), type_text)


def element_text(typ: Type) -> str:
    return "|".join(alt[0] if alt[0] != "name" else "name" for alt in typ[1]) + \
        ("?" if typ[2] else "")


def matches(value: Any, alt: Alt) -> bool:
    kind = alt[0]
    if kind == "any":
        return True
    if kind == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind == "bool":
        return isinstance(value, bool)
    if kind == "string":
        return isinstance(value, str)
    if kind == "name":
        return isinstance(value, str) and value in alt[1]
    if kind == "list":
        return isinstance(value, list)
    return isinstance(value, dict)  # object, map


def check_object(obj: dict[str, Any], shown: str, decl: str, is_open: bool,
                 writer_ok: Callable[[Field], bool],
                 declaration: Declaration = REPORT) -> Optional[str]:
    """The fields of `obj` against those declared under `decl` ("" at the top level)."""
    declared = children(decl + "." if decl else "", declaration)
    at = shown + "." if shown else ""
    for name, f in declared.items():
        if name not in obj:
            if f.required:
                return "%s%s: is missing" % (at, name)
            continue
        if not writer_ok(f):
            return "%s%s: is the pool's to write" % (at, name)
        bad = check_value(obj[name], f.type, at + name, f.path, f.type_text, writer_ok,
                          declaration)
        if bad:
            return bad
    if not is_open:
        for name in obj:
            if name not in declared:
                return "%s%s: is not a field of %s (%s)" % (at, name, declaration.of,
                                                            declaration.file)
    return None


def violation(report: Any) -> Optional[str]:
    """The first way `report` (as JSON decodes it) breaks the declared fields, naming the field,
    or None. The harness writes no field whose writer is the pool."""
    if not isinstance(report, dict):
        return "the report is not an object"
    bad = check_object(report, "", "", False, lambda f: f.writer != "pool")
    if bad:
        return bad
    if report.get("harness") != VERSION:
        return "harness: is %r, the declared version is %d" % (report.get("harness"), VERSION)
    return None


def event_violation(event: Any) -> Optional[str]:
    """The first way a worker event (worker_events.txt) breaks its declaration, naming the event
    or field, or None: its "event" names a declared event, and its other fields are that
    event's."""
    if not isinstance(event, dict):
        return "the event is not an object"
    name = event.get("event")
    events = children("", EVENTS)
    if not isinstance(name, str) or name not in events:
        return "event: %r is not an event of worker_events.txt (%s)" % (
            name, ", ".join(events))
    rest = {k: v for k, v in event.items() if k != "event"}
    return check_object(rest, name, name, False, lambda f: True, EVENTS)


def op_violation(message: Any, fds: int) -> Optional[str]:
    """The first way a message of the pool (worker_ops.txt) breaks its declaration, naming the
    op or field, or None: its "op" names a declared op, its other fields are that op's, and it
    came with the op's number of descriptors (`fds`: how many it came with)."""
    if not isinstance(message, dict):
        return "the message is not a JSON object: %s" % str(message)[:200]
    name = message.get("op")
    ops = OPS.ops()
    if not isinstance(name, str) or name not in ops:
        return "op: %r is not an op of worker_ops.txt (%s)" % (name, ", ".join(ops))
    rest = {k: v for k, v in message.items() if k != "op"}
    bad = check_object(rest, name, name, False, lambda f: True, OPS)
    if bad:
        return bad
    if fds != OPS.fds[name]:
        return "%s: came with %d file descriptors, declared %d (worker_ops.txt)" % (
            name, fds, OPS.fds[name])
    return None


def file_violation(name: str, content: Any) -> Optional[str]:
    """The first way what the pool wrote for a prestarted sample process (worker_ops.txt's
    `file NAME`: "prep", the file prepare.prep names; "request", what comes on its request pipe)
    breaks its declaration, naming the field, or None."""
    if name not in OPS.files:
        raise ValueError("%r is not a `file` of worker_ops.txt (%s)" % (name, ", ".join(OPS.files)))
    f = OPS.fields[name]
    return check_value(content, f.type, name, f.path, f.type_text, lambda f: True, OPS)


def request_version_error(request: Any) -> Optional[str]:
    """Why the request's report version ("report_version", the version of the file the pool
    compiled in) is not this harness's, or None when it is."""
    asked = request.get("report_version") if isinstance(request, dict) else None
    if asked == VERSION:
        return None
    return ("the pool expects report version %r, this harness writes version %d (%s): install "
            "the harness of the same kforge" % (asked, VERSION,
                                                os.path.dirname(os.path.abspath(__file__))))
