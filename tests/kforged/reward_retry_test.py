"""python/kforge_reward.py against a real HTTP server on 127.0.0.1 that behaves as a kforged
being restarted does: a connection reset, 503 "kforged is stopping", a port that refuses
connections, an answer given before the batch ended ("done": false), a server that never answers.
The client must retry until the items' deadline, send again only the items without an answer,
and then give null rewards rather than raise. Exits 0 when all hold.

    python3 reward_retry_test.py
"""

import json
import os
import socket
import struct
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
import kforge_reward as kr  # noqa: E402

failures = []


def check(what, cond, detail=""):
    if not cond:
        failures.append("%s: %s" % (what, detail))


class Server:
    """A scripted HTTP server: each POST takes the next step of `script` (the last one repeats).
    Steps: "reset" (RST, no answer), "503", "400", "refuse" (the port refuses connections for 1 s),
    "partial" (200, done false: the first item judged, the rest waiting), "hang" (reads the
    request, never answers), "ok" (200, every item judged, reward from its id)."""

    def __init__(self, script):
        self.script, self.bodies, self.port = list(script), [], 0
        self.stop = False
        self._listen()
        threading.Thread(target=self._serve, daemon=True).start()

    def _listen(self):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        for _ in range(100):  # the same port again, once the kernel has let it go
            try:
                sock.bind(("127.0.0.1", self.port))
                break
            except OSError:
                time.sleep(0.05)
        self.port = sock.getsockname()[1]
        sock.listen(16)
        self.sock = sock

    def _unlisten(self):
        try:
            self.sock.shutdown(socket.SHUT_RDWR)  # wakes the accept() of the serving thread
        except OSError:
            pass
        self.sock.close()

    def _serve(self):
        while not self.stop:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                time.sleep(0.05)  # refusing for a while: the socket is closed
                continue
            threading.Thread(target=self._one, args=(conn,), daemon=True).start()

    def _one(self, conn):
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(65536)
            if not chunk:
                return conn.close()
            data += chunk
        head, body = data.split(b"\r\n\r\n", 1)
        n = 0
        for line in head.split(b"\r\n"):
            if line.lower().startswith(b"content-length:"):
                n = int(line.split(b":", 1)[1])
        while len(body) < n:
            body += conn.recv(65536)
        req = json.loads(body)
        self.bodies.append(req)
        step = self.script.pop(0) if len(self.script) > 1 else self.script[0]
        items = req["items"]
        if step == "reset":
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            return conn.close()
        if step == "refuse":
            self._unlisten()
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            conn.close()
            time.sleep(1.0)
            return self._listen()
        if step == "hang":
            time.sleep(60)
            return conn.close()
        if step == "503":
            return self._answer(conn, 503, {"error": "kforged is stopping"})
        if step == "400":
            return self._answer(conn, 400, {"error": "items[0].unitest_code: missing or empty"})
        results = []
        for k, it in enumerate(items):
            waiting = step == "partial" and k > 0
            results.append({"id": it["id"], "status": "waiting" if waiting else "judged",
                            "verdict": None if waiting else "passed",
                            "reward": None if waiting else float(it["id"]) / 10})
        self._answer(conn, 200, {"batch": len(self.bodies), "done": step != "partial",
                                 "results": results})

    @staticmethod
    def _answer(conn, code, obj):
        data = json.dumps(obj).encode()
        reason = {200: "OK", 400: "Bad Request", 503: "Service Unavailable"}[code]
        conn.sendall(b"HTTP/1.1 %d %s\r\nContent-Type: application/json\r\n"
                     b"Content-Length: %d\r\nConnection: close\r\n\r\n" % (code, reason.encode(),
                                                                            len(data)) + data)
        conn.close()

    def close(self):
        self.stop = True
        self._unlisten()


def items(n):
    return [{"id": str(i + 1), "code": "c", "kernel_wrapper": "w", "unitest_code": "t"}
            for i in range(n)]


# kforged restarting mid-batch: every failure is retried, and the items the stopping kforged had
# answered are not sent again.
srv = Server(["reset", "503", "refuse", "partial", "ok"])
client = kr.KforgeReward(url="http://127.0.0.1:%d" % srv.port, deadline_s=60)
t0 = time.monotonic()
got = client.score(items(3))
took = time.monotonic() - t0
check("restart: rewards", [r["reward"] for r in got] == [0.1, 0.2, 0.3], got)
check("restart: attempts", len(srv.bodies) >= 4, len(srv.bodies))
sent = [[it["id"] for it in b["items"]] for b in srv.bodies]
check("restart: only the unanswered items again", sent[-1] == ["2", "3"], sent)
check("restart: the deadline shrinks", srv.bodies[-1]["deadline_s"] < 60, srv.bodies[-1])
check("restart: well within the deadline", took < 30, took)
srv.close()

# A kforged that stays away: null rewards by the deadline, never an exception (TRL skips None;
# verl and OpenRLHF get null_reward).
srv = Server(["503"])
url = "http://127.0.0.1:%d" % srv.port
t0 = time.monotonic()
got = kr.trl_reward(url=url, deadline_s=3)(completions=["```python\nx = 1\n```"] * 2,
                                           kernel_wrapper=["w", "w"], unitest_code=["t", "t"])
took = time.monotonic() - t0
check("503 until the deadline: None rewards", got == [None, None], got)
check("503 until the deadline: retried", len(srv.bodies) >= 3, len(srv.bodies))
check("503 until the deadline: by it", 2 <= took < 6, took)
res = kr.KforgeReward(url=url, deadline_s=2).score(items(1))
check("unanswered status", res[0]["status"] == "unanswered" and "503" in res[0]["detail"], res)
srv.close()

# Nobody listening at all: the same.
free = socket.socket()
free.bind(("127.0.0.1", 0))
port = free.getsockname()[1]
free.close()
t0 = time.monotonic()
res = kr.KforgeReward(url="http://127.0.0.1:%d" % port, deadline_s=2).score(items(2))
check("refused: None rewards", [r["reward"] for r in res] == [None, None], res)
check("refused: by the deadline", time.monotonic() - t0 < 5, time.monotonic() - t0)

# A kforged that takes the request and never answers: null rewards, bounded by the deadline
# plus the read timeout's margin.
srv = Server(["hang"])
t0 = time.monotonic()
res = kr.KforgeReward(url="http://127.0.0.1:%d" % srv.port, deadline_s=1).score(items(1))
took = time.monotonic() - t0
check("hang: None reward", res[0]["reward"] is None, res)
check("hang: bounded", took < 15, took)
srv.close()

# A bad request is the caller's fault: raised at once, not retried.
srv = Server(["400"])
try:
    kr.KforgeReward(url="http://127.0.0.1:%d" % srv.port, deadline_s=30).score(items(1))
    check("400: raised", False, "no ScoreError")
except kr.ScoreError as e:
    check("400: names the field", "items[0]" in str(e), e)
check("400: not retried", len(srv.bodies) == 1, len(srv.bodies))
srv.close()

if failures:
    print("\n".join(failures))
    sys.exit(1)
print("ok")
