"""kforge as the reward for RL on Triton kernels: a client of kforged's POST /v1/score and the
adapters trainers call (standard library only; copy this one file next to your trainer).

    TRL       GRPOTrainer(reward_funcs=[trl_reward()])       or trl_reward_async()
    verl      custom_reward_function.path=kforge_reward.py  name=compute_score (or compute_score_batch)
    OpenRLHF  python3 kforge_reward.py serve-openrlhf --port 5000   (--remote_rm_url http://HOST:5000/)

docs/OPERATIONS.md "Scoring for RL" shows each wired up. The endpoint's address and token come
from the arguments, else KFORGE_REWARD_URL (default http://127.0.0.1:8471) and
KFORGE_REWARD_TOKEN.

What is scored: an item is {"code", "kernel_wrapper", "unitest_code"} (or "key" naming a sample
imported into kforge's database, for its code). A completion fills it in one of two ways:
- a JSON object with kernel_wrapper and unitest_code (kforge's own code stage: the model writes
  the wrapper and the test for the reference's kernels), the rest from the reference;
- otherwise the last ```python block (or the whole text) is the kernel code, and the wrapper and
  test come from the reference (the model writes the kernel, the dataset holds the test).
The reference is a dict (a dataset row's fields, or a JSON string of one) with any of code, key,
kernel_wrapper, unitest_code.

A reward is None when kforge could not judge the item (a deadline, the verifier's environment, an
infrastructure fault): drop it rather than train on it. TRL skips None; verl and OpenRLHF need a
number, so those adapters give `null_reward` (default 0.0) instead.
"""

import argparse
import asyncio
import json
import logging
import os
import re
import sys
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DEFAULT_URL = "http://127.0.0.1:8471"
_log = logging.getLogger("kforge_reward")


class ScoreError(Exception):
    pass


class KforgeReward:
    """A client of POST /v1/score. A retry sends the items again: kforge's verdict cache answers
    those already judged and waits for those still running, so nothing is verified twice.

    kforged restarting (a deploy, a crash) must not cost the trainer its rewards nor crash it: a
    connection refused, reset or cut, a 5xx (503 "kforged is stopping"), a 429 (after its
    Retry-After), or an answer given before the batch ended (a stopping kforged answers what it
    has, "done": false) is retried with backoff (0.5 s doubling, at most max_retry_wait_s), sending
    again only the items still without an answer, until their deadline (deadline_s from the first
    attempt). An item still unanswered then gets a null reward (status "unanswered", its detail
    the last error), as an item whose deadline passed in kforged's queue does. A 4xx other than
    429 is the request's own fault: ScoreError."""

    def __init__(self, url=None, token=None, tag="rl", reward="triton_eval", reward_params=None,
                 deadline_s=600, checks=None, max_retry_wait_s=10, retries=None):
        # retries: accepted for callers of earlier versions; retries now go on until the deadline.
        self.url = (url or os.environ.get("KFORGE_REWARD_URL") or DEFAULT_URL).rstrip("/")
        self.token = token if token is not None else os.environ.get("KFORGE_REWARD_TOKEN")
        self.tag, self.reward, self.reward_params = tag, reward, reward_params or {}
        self.deadline_s, self.checks = deadline_s, checks or {}
        self.max_retry_wait_s = max_retry_wait_s

    def _request(self, method, path, body=None, timeout=None):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + path, data=data, method=method)
        req.add_header("Content-Type", "application/json")
        if self.token:
            req.add_header("Authorization", "Bearer " + self.token)
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return json.loads(resp.read().decode() or "null")

    def _body(self, items, deadline_s, wait):
        body = {"items": items, "deadline_s": deadline_s, "reward": self.reward,
                "tag": self.tag, "wait": wait}
        if self.reward_params:
            body["reward_params"] = self.reward_params
        if self.checks:
            body["checks"] = self.checks
        return body

    def _post(self, items, deadline, wait):
        """One POST of `items` with what is left of the deadline: (answer, None), or (None, seconds
        to wait before the next attempt) after a failure worth retrying; ScoreError otherwise."""
        left = max(1.0, deadline - time.monotonic())
        # kforged answers by the batch's deadline plus 5 s and streams a space every second
        # meanwhile, so a read that waits longer than that is a kforged that hangs.
        timeout = left + 10
        try:
            return self._request("POST", "/v1/score", self._body(items, round(left, 3), wait),
                                 timeout=timeout), None
        except urllib.error.HTTPError as e:
            text = e.read().decode(errors="replace")
            if e.code == 429:
                self._last = ScoreError("429: " + text)
                return None, float(e.headers.get("Retry-After") or 5)
            if 500 <= e.code < 600:
                self._last = ScoreError("%d: %s" % (e.code, text))
                return None, 0
            raise ScoreError("%d: %s" % (e.code, text)) from None
        except (urllib.error.URLError, ConnectionError, TimeoutError, OSError, ValueError) as e:
            self._last = e  # refused, reset, cut, timed out, or a body cut short (ValueError)
            return None, 0

    def score(self, items, wait=True):
        """The results of POST /v1/score for `items`, in their order (see the class for retries).
        With wait=False: kforged's 202 answer (the batch id); ScoreError when none came by the
        deadline."""
        deadline = time.monotonic() + self.deadline_s
        results = [None] * len(items)
        pending = list(range(len(items)))
        self._last, attempt = None, 0
        while True:
            out, retry_in = self._post([items[i] for i in pending], deadline, wait)
            if out is not None and not wait:
                return out
            if out is not None:
                for i, r in zip(pending, out.get("results") or []):
                    if r.get("status", "waiting") != "waiting":
                        results[i] = r
                pending = [i for i in pending if results[i] is None]
                if not pending:
                    return results
                self._last = ScoreError("kforged answered before the batch ended (stopping?)")
                retry_in = 0
            pause = min(max(retry_in, 0.5 * 2 ** attempt), self.max_retry_wait_s)
            attempt += 1
            remaining = deadline - time.monotonic()
            if remaining <= 0.25:
                break
            time.sleep(min(pause, remaining - 0.25))  # the last attempt just before the deadline
        if not wait:
            raise ScoreError("no answer from %s by the deadline (%d attempts): %s"
                             % (self.url, attempt, self._last))
        why = "no answer from %s by the deadline (%d attempts): %s" % (self.url, attempt,
                                                                       self._last)
        _log.warning("kforge_reward: %d of %d items: %s", len(pending), len(items), why)
        for i in pending:
            results[i] = {"id": items[i].get("id"), "status": "unanswered", "verdict": None,
                          "flags": [], "reward": None, "detail": why, "cached": False}
        return results

    def batch(self, batch_id, wait_s=30):
        """GET /v1/score/{batch}: the batch's results so far, waiting up to wait_s for its end."""
        return self._request("GET", "/v1/score/%d?wait_s=%g" % (batch_id, wait_s),
                             timeout=wait_s + 30)

    def queue(self):
        return self._request("GET", "/v1/queue", timeout=30)

    def rewards(self, items):
        return [r["reward"] for r in self.score(items)]

    async def ascore(self, items):
        return await asyncio.to_thread(self.score, items)


_FENCE = re.compile(r"```(?:python|py)?\s*\n(.*?)```", re.S)


def _text(completion):
    """A completion's text: a string, or a conversation's last message's content."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, list) and completion:
        last = completion[-1]
        return last.get("content", "") if isinstance(last, dict) else str(last)
    if isinstance(completion, dict):
        return completion.get("content", "")
    return str(completion)


def _json_object(text):
    """The first JSON object in text (bare or in a ```json block), or None."""
    for candidate in [text] + re.findall(r"```(?:json)?\s*\n(.*?)```", text, re.S):
        candidate = candidate.strip()
        start = candidate.find("{")
        if start < 0:
            continue
        try:
            obj, _ = json.JSONDecoder().raw_decode(candidate[start:])
        except ValueError:
            continue
        if isinstance(obj, dict):
            return obj
    return None


def make_item(completion, reference, item_id=None):
    """The item a completion and its reference make (see the module's docstring)."""
    if isinstance(reference, str):
        try:
            reference = json.loads(reference)
        except ValueError:
            reference = {"unitest_code": reference}
    reference = dict(reference or {})
    item = {k: reference[k] for k in ("code", "key", "kernel_wrapper", "unitest_code")
            if reference.get(k)}
    text = _text(completion)
    obj = _json_object(text)
    if obj and obj.get("kernel_wrapper") and obj.get("unitest_code"):
        item["kernel_wrapper"] = obj["kernel_wrapper"]
        item["unitest_code"] = obj["unitest_code"]
        if obj.get("code"):
            item["code"] = obj["code"]
    else:
        blocks = _FENCE.findall(text)
        item["code"] = blocks[-1] if blocks else text
    if item_id is not None:
        item["id"] = str(item_id)
    return item


def _references(n, kwargs):
    """TRL passes the dataset's other columns as lists: a `reference` column (dict or JSON), or
    the item's fields as columns of their own."""
    if "reference" in kwargs:
        return list(kwargs["reference"])
    cols = [c for c in ("code", "key", "kernel_wrapper", "unitest_code") if c in kwargs]
    return [{c: kwargs[c][i] for c in cols} for i in range(n)]


def trl_reward(client=None, **client_args):
    """A TRL reward function: reward(prompts, completions, **columns) -> [float or None]."""
    client = client or KforgeReward(**client_args)

    def kforge_reward(prompts=None, completions=None, **kwargs):
        refs = _references(len(completions), kwargs)
        return client.rewards([make_item(c, r, i) for i, (c, r) in
                               enumerate(zip(completions, refs))])

    return kforge_reward


def trl_reward_async(client=None, **client_args):
    """The same as an async function, for trainers that await their reward functions."""
    client = client or KforgeReward(**client_args)

    async def kforge_reward(prompts=None, completions=None, **kwargs):
        refs = _references(len(completions), kwargs)
        results = await client.ascore([make_item(c, r, i) for i, (c, r) in
                                       enumerate(zip(completions, refs))])
        return [r["reward"] for r in results]

    return kforge_reward


_VERL_CLIENT = None


def _verl_client():
    global _VERL_CLIENT
    if _VERL_CLIENT is None:
        _VERL_CLIENT = KforgeReward(tag=os.environ.get("KFORGE_REWARD_TAG", "verl"),
                                    reward=os.environ.get("KFORGE_REWARD_PRESET", "triton_eval"))
    return _VERL_CLIENT


def compute_score(data_source, solution_str, ground_truth, extra_info=None, null_reward=0.0):
    """verl's custom reward function (one item): {"score", ...components} for verl to log."""
    r = _verl_client().score([make_item(solution_str, ground_truth, 0)])[0]
    out = {"score": null_reward if r["reward"] is None else r["reward"],
           "judged": r["reward"] is not None, "verdict": r["verdict"] or r["status"]}
    return out


def compute_score_batch(data_sources, solution_strs, ground_truths, extra_infos=None,
                        null_reward=0.0):
    """verl's batch reward manager (reward_model.reward_manager=batch): one request per batch."""
    items = [make_item(s, g, i) for i, (s, g) in enumerate(zip(solution_strs, ground_truths))]
    return [null_reward if r["reward"] is None else r["reward"]
            for r in _verl_client().score(items)]


def openrlhf_rewards(client, body, null_reward=0.0):
    """OpenRLHF's remote reward: {"query", "prompts", "labels"} -> {"rewards", "scores"}. A query
    is the prompt followed by the response; a label is the reference."""
    queries, prompts = body["query"], body.get("prompts") or [""] * len(body["query"])
    labels = body.get("labels") or [None] * len(queries)
    items = []
    for i, (q, p, lab) in enumerate(zip(queries, prompts, labels)):
        response = q[len(p):] if p and q.startswith(p) else q
        items.append(make_item(response, lab, i))
    results = client.score(items)
    scores = [r["reward"] for r in results]
    return {"rewards": [null_reward if s is None else s for s in scores], "scores": scores}


def serve_openrlhf(client, host="127.0.0.1", port=5000, null_reward=0.0, keepalive_s=5.0):
    """Serves OpenRLHF's --remote_rm_url: POST / (any path) with its JSON body.

    OpenRLHF reads the answer with a 180 s timeout between bytes and retries a few times; a
    batch that takes kforge longer would time out every attempt. So the answer's headers go out
    at once and a space every keepalive_s seconds while kforge scores (JSON readers skip leading
    whitespace), then the JSON; the connection closes after it (HTTP/1.0)."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            try:
                n = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(n))
                if not isinstance(body, dict) or not isinstance(body.get("query"), list):
                    raise ValueError("the body must be a JSON object with a list `query`")
            except (ValueError, TypeError) as e:
                return self._answer(400, {"error": str(e)})
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            done, out = threading.Event(), {}

            def work():
                try:
                    out["answer"] = openrlhf_rewards(client, body, null_reward)
                except (ValueError, KeyError, TypeError, ScoreError) as e:
                    out["answer"] = {"error": str(e)}
                finally:
                    done.set()

            threading.Thread(target=work, daemon=True).start()
            try:
                while not done.wait(keepalive_s):
                    self.wfile.write(b" ")
                    self.wfile.flush()
                self.wfile.write(json.dumps(out["answer"]).encode())
            except OSError:
                pass  # OpenRLHF went away; its retry finds the items cached or still running

        def _answer(self, code, obj):
            data = json.dumps(obj).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, fmt, *args):
            pass

    server = ThreadingHTTPServer((host, port), Handler)
    return server


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("serve-openrlhf", help="serve OpenRLHF's remote reward protocol")
    s.add_argument("--host", default="127.0.0.1")
    s.add_argument("--port", type=int, default=5000)
    s.add_argument("--url", default=None, help="kforged's endpoint (KFORGE_REWARD_URL)")
    s.add_argument("--tag", default="openrlhf")
    s.add_argument("--reward", default="triton_eval")
    s.add_argument("--deadline-s", type=float, default=600)
    s.add_argument("--null-reward", type=float, default=0.0)
    q = sub.add_parser("queue", help="print GET /v1/queue")
    q.add_argument("--url", default=None)
    args = ap.parse_args(argv)
    if args.cmd == "queue":
        print(json.dumps(KforgeReward(url=args.url).queue(), indent=2))
        return 0
    client = KforgeReward(url=args.url, tag=args.tag, reward=args.reward,
                          deadline_s=args.deadline_s)
    server = serve_openrlhf(client, args.host, args.port, args.null_reward)
    print("serving OpenRLHF rewards on http://%s:%d/ for %s" % (args.host, server.server_port,
                                                               client.url), flush=True)
    server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
