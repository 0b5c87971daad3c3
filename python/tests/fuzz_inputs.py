"""Random inputs through Gate, Client and the adapters' Session, in a process of its own (the
test runs it so that a crash fails the test): every call answers a dict or raises an error of
warrant_gate's hierarchy. Prints `N inputs tried, K refused, 0 not of the hierarchy`."""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import sys
from typing import Any, Callable

from warrant_gate import Client, Gate, WarrantError, example
from warrant_gate.calls import Decision, Session

WEIRD_STRINGS = ["", "a\0b", "\ud800", "\udcff", "é", "\U0001f600", "\x00", "x" * 5000, "\u2028", '"', "\\"]


def value(rng: random.Random, depth: int = 0) -> Any:
    """A random Python value: JSON, almost JSON, or not JSON at all."""
    kind = rng.randrange(18 if depth < 6 else 10)
    if kind == 0:
        return None
    if kind == 1:
        return rng.choice([True, False])
    if kind == 2:
        return rng.choice([0, -1, 2**63 - 1, 2**64, -(2**63) - 1, 2**200, rng.randrange(-1000, 1000)])
    if kind == 3:
        return rng.choice([0.5, -0.0, math.nan, math.inf, -math.inf, 1e308, 5e-324])
    if kind in (4, 5):
        return rng.choice(WEIRD_STRINGS + [str(rng.random())])
    if kind == 6:
        return rng.choice([b"\xff\xfe", bytearray(b"x"), {1, 2}, frozenset(), object(), complex(1, 2), range(3)])
    if kind == 7:
        return deep(rng)
    if kind == 8:
        return "y" * rng.choice([10, 1 << 20, (1 << 20) + 1])
    if kind == 9:
        return [0] * rng.choice([0, 1, 1000, 200_000])
    if kind < 14:
        return [value(rng, depth + 1) for _ in range(rng.randrange(4))]
    keys: list[Any] = [rng.choice(WEIRD_STRINGS + ["op", "args", "acts", "turn"]) for _ in range(rng.randrange(4))]
    if rng.random() < 0.1:
        keys.append(rng.choice([1, None, 2.5, (1,), b"k"]))
    out: dict[Any, Any] = {}
    for key in keys:
        out[key] = value(rng, depth + 1)
    return out


def deep(rng: random.Random) -> Any:
    depth = rng.choice([100, 126, 127, 128, 1000, 30_000, 100_000])
    inner: Any = rng.choice([[], {}, 1, "x"])
    for _ in range(depth):
        inner = [inner] if rng.random() < 0.5 else {"k": inner}
    return inner


def text(rng: random.Random) -> Any:
    """Random JSON text (or not): repeated keys, deep nesting, NaN, NUL escapes, cut text."""
    kind = rng.randrange(9)
    if kind == 0:
        return '{"a": 1, "a": 2}'
    if kind == 1:
        n = rng.choice([126, 127, 128, 100_000])
        return '{"x": ' + "[" * n + "]" * n + "}"
    if kind == 2:
        return '{"x": NaN, "y": Infinity}'
    if kind == 3:
        return '{"x": "\\u0000", "\\u0000": 1}'
    if kind == 4:
        return '{"x": "\\ud800"}'
    if kind == 5:
        return rng.choice(["", "[", "{", "null", "[]", "1", '"x"', "{}{}", "\ufeff{}"])
    if kind == 6:
        return rng.choice([b"{}", None, 5, ["{}"]])
    try:
        return json.dumps(value(rng), ensure_ascii=rng.random() < 0.5)[: rng.choice([10**9, 20])]
    except (TypeError, ValueError, RecursionError):
        return "{"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rounds", type=int, default=150)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    gate = Gate(example(), os.environ["FUZZ_STORE"])
    client = Client(os.environ["FUZZ_URL"], os.environ["FUZZ_KEY"])
    base = {"conversation": "fuzz", "actor": "yusuf_rossi_9620", "at": "2026-11-29T15:00:00Z",
            "time_zone": "UTC", "locale": "en-US", "entries": [{"kind": "user", "text": "hi"}]}
    tried = refused = stray = 0

    def attempt(call: Callable[[], Any]) -> None:
        nonlocal tried, refused, stray
        tried += 1
        try:
            answer = call()
            assert answer is None or isinstance(answer, (dict, list, Decision)), answer
        except WarrantError:
            refused += 1
        except Exception as error:  # noqa: BLE001 - what the test counts
            stray += 1
            print(f"not of the hierarchy: {type(error).__name__}: {str(error)[:200]}", file=sys.stderr)

    for round in range(args.rounds):
        for target in (gate, client):
            sessions = Session(target, f"fuzz-{round}", "yusuf_rossi_9620", at="2026-11-29T15:00:00Z")
            whole = value(rng)
            attempt(lambda: target.turn(whole))
            fields = {**base, "turn": f"t{round}", rng.choice(list(base) + ["acts", "answers"]): value(rng)}
            attempt(lambda: target.turn(fields))
            act = {**base, "turn": f"a{round}", "acts": [{"op": "get_order_details", "args": {"order_id": value(rng)}}]}
            attempt(lambda: target.turn(act))
            raw = text(rng)
            attempt(lambda: target.turn_json(raw))
            attempt(lambda: target.put_record("orders", rng.choice(WEIRD_STRINGS + [5]), value(rng)))
            attempt(lambda: target.effect_outcome(rng.choice(["eff_x", "\0", 5]), rng.choice(["done", "x", None]), value(rng)))
            attempt(lambda: target.render(rng.choice(WEIRD_STRINGS + [5, None])))
            attempt(lambda: sessions.decide(f"call-{round}", "get_order_details", value(rng)))
            attempt(lambda: sessions.decide_json(f"call-j{round}", "get_order_details", text(rng)))
    print(f"{tried} inputs tried, {refused} refused, {stray} not of the hierarchy")
    sys.exit(1 if stray else 0)


if __name__ == "__main__":
    main()
