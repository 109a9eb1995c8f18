import json


def encode_@ID@(rows):
    return json.dumps([{"i": i, "v": v * @SCALE@} for i, v in enumerate(rows)], sort_keys=True)
# ---- kernel_wrapper ----
def roundtrip(rows):
    return json.loads(encode_@ID@(rows))
# ---- unitest_code ----
def test_roundtrip():
    rows = [float(i) for i in range(100)]
    assert [r["v"] for r in roundtrip(rows)] == [v * @SCALE@ for v in rows]
