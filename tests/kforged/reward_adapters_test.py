"""The trainer adapters of python/kforge_reward.py against a real kforged (started by
score_test.cpp with the CPU stand-in Triton): TRL's reward function (sync and async), verl's
compute_score and batch form, OpenRLHF's remote reward server. Exits 0 when all hold.

    python3 reward_adapters_test.py URL ADD_CODE_FILE
"""

import asyncio
import json
import os
import sys
import threading
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
import kforge_reward as kr  # noqa: E402

URL, CODE = sys.argv[1], open(sys.argv[2]).read()
WRAPPER = ("def add(x, y):\n    out = [0.0] * len(x)\n    n = len(x)\n"
           "    grid = lambda meta: (triton.cdiv(n, meta[\"BLOCK_SIZE\"]),)\n"
           "    add_kernel[grid](x, y, out, n, BLOCK_SIZE=64)\n    return out\n")
GOOD = ("def test_add():\n    for n in (1, 63, 64, 130):\n        x = [float(i) for i in range(n)]\n"
        "        y = [2.0 * i for i in range(n)]\n"
        "        assert add(x, y) == [3.0 * i for i in range(n)], 'wrong sum for n=%d' % n\n")
BAD = ("def test_add():\n    x = [1.0, 2.0]\n    assert add(x, x) == [9.0, 4.0], 'wrong sum'\n")
failures = []


def check(what, cond, detail=""):
    if not cond:
        failures.append("%s: %s" % (what, detail))


# The model writes the wrapper and the test (kforge's code stage): a JSON completion.
def completion(test, tag):
    return json.dumps({"kernel_wrapper": WRAPPER, "unitest_code": test + "# %s\n" % tag})


ref = {"code": CODE}
os.environ["KFORGE_REWARD_URL"] = URL

# TRL: conversational completions, the reference as a column.
trl = kr.trl_reward(tag="trl")
# TRL passes completion_ids and trainer_state too (recent versions).
got = trl(prompts=["p", "p"],
          completions=[[{"role": "assistant", "content": completion(GOOD, "trl")}],
                       [{"role": "assistant", "content": completion(BAD, "trl")}]],
          completion_ids=[[1, 2], [3]], trainer_state=None, reference=[ref, ref])
check("trl", len(got) == 2 and got[0] is not None and got[0] > got[1] and got[1] == 0.0, got)

trl_async = kr.trl_reward_async(tag="trl")
got = asyncio.run(trl_async(prompts=["p"], completions=["```json\n%s\n```" %
                                                        completion(GOOD, "trl-async")],
                            code=[CODE]))
check("trl async", got == [1.0] or (got and got[0] is not None and got[0] >= 0), got)

# verl: one item, then a batch; the ground truth a JSON string of the reference.
gt = json.dumps(ref)
one = kr.compute_score("kforge", completion(GOOD, "verl"), gt)
check("verl compute_score", isinstance(one, dict) and one["judged"] and one["score"] >= 0.0, one)
batch = kr.compute_score_batch(["kforge"] * 2, [completion(GOOD, "verl"),
                                                completion(BAD, "verl")], [gt, gt])
check("verl batch", len(batch) == 2 and batch[0] > batch[1], batch)

# The model writes the kernel; the dataset holds the wrapper and the test.
kernel_ref = {"kernel_wrapper": WRAPPER, "unitest_code": GOOD}
got = kr.trl_reward(tag="trl")(completions=["Here:\n```python\n%s```\n" % CODE],
                               reference=[kernel_ref])
check("trl kernel completion", got and got[0] is not None and got[0] > 0, got)

# OpenRLHF: the remote reward protocol over HTTP.
server = kr.serve_openrlhf(kr.KforgeReward(tag="openrlhf"), "127.0.0.1", 0, keepalive_s=0.5)
threading.Thread(target=server.serve_forever, daemon=True).start()
body = {"query": ["P" + completion(GOOD, "orl"), "P" + completion(BAD, "orl")],
        "prompts": ["P", "P"], "labels": [gt, gt]}
req = urllib.request.Request("http://127.0.0.1:%d/get_reward" % server.server_port,
                             data=json.dumps(body).encode(), method="POST",
                             headers={"Content-Type": "application/json"})
with urllib.request.urlopen(req, timeout=120) as resp:
    out = json.loads(resp.read())
check("openrlhf", len(out["rewards"]) == 2 and out["rewards"][0] > out["rewards"][1], out)

# OpenRLHF reads with a timeout between bytes (180 s) and retries: a batch that takes longer
# than that must still be answered. Here a 1 s read timeout against a 4 s item.
SLOW = ("import time\n_slept = []\n\n\ndef test_add():\n    if not _slept:\n"
        "        time.sleep(4)\n        _slept.append(1)\n" + GOOD.split("\n", 1)[1])
body = {"query": ["P" + completion(SLOW, "orl-slow")], "prompts": ["P"], "labels": [gt]}
req = urllib.request.Request("http://127.0.0.1:%d/get_reward" % server.server_port,
                             data=json.dumps(body).encode(), method="POST",
                             headers={"Content-Type": "application/json"})
try:
    with urllib.request.urlopen(req, timeout=1.5) as resp:
        out = json.loads(resp.read())
    check("openrlhf slow", out["rewards"] == [1.0] or out["rewards"][0] > 0, out)
except (OSError, ValueError) as e:
    check("openrlhf slow", False, "no answer within the reader's timeout: %r" % e)
server.shutdown()

q = kr.KforgeReward().queue()
check("queue", "depth" in q and "workers" in q, q)

if failures:
    print("\n".join(failures))
    sys.exit(1)
print("ok")
