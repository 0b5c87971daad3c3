"""The retail test tasks through the embedded gate, the way an agent's executor plays them.

    python examples/python/retail_executor.py [--quiet]

For every τ-bench retail test task with write actions, on a fresh store: each write is proposed
as its task's customer, held for confirmation, confirmed, executed (here the system of record
agrees with what the gate predicted, so the executor reports `done`) and reported. Before each
write, mutated versions of it that each break exactly one precondition are proposed and must be
refused or held with the reason that names the broken rule; a mutation that needs the data
changed first (an order in another status, a gift card without balance) writes the row through
the records write (`put_record`, as the system of record would) and puts it back afterwards.
Four writes of the tasks break one of the benchmark's own preconditions and must be refused with
that rule. The counts are those of the Rust test `crates/warrant-engine/tests/it/retail.rs`.
"""

from __future__ import annotations

import copy
import json
import pathlib
import sys
import tempfile
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Optional

from warrant_gate import Gate, tools

RETAIL = pathlib.Path(__file__).resolve().parents[1] / "retail"


def writes_of_the_contract() -> set[str]:
    """The write actions: the contract's tools that change records, from the definitions
    `warrant tools --format mcp` prints (an MCP tool that is not read-only)."""
    listed = tools(RETAIL / "contract.toml", "mcp")["tools"]
    return {tool["name"] for tool in listed if not tool["annotations"]["readOnlyHint"]}


WRITES = writes_of_the_contract()
# (task, write index among the task's writes) -> the rule the benchmark's own tool enforces.
BREAKS_A_PRECONDITION = {
    (12, 0): "refund_to_another_method",
    (13, 0): "refund_to_another_method",
    (64, 0): "order_not_delivered",
    (106, 0): "gift_card_cannot_cover",
}
ADDRESS = ["address1", "address2", "city", "state", "country", "zip"]
CLOCK = {"time_zone": "America/New_York", "locale": "en-US"}


@dataclass
class Data:
    """The retail data files, each keyed and sorted by id; items are every product's variants."""

    orders: dict[str, Any]
    users: dict[str, Any]
    items: dict[str, Any]

    @staticmethod
    def read() -> "Data":
        def load(name: str) -> dict[str, Any]:
            rows = json.loads((RETAIL / "data" / name).read_text())
            return dict(sorted(rows.items()))

        items = {}
        for product_id, product in load("products.json").items():
            for item_id, variant in product["variants"].items():
                items[item_id] = {**variant, "product_id": product_id}
        return Data(load("orders.json"), load("users.json"), dict(sorted(items.items())))


@dataclass
class Mutation:
    name: str
    kwargs: dict[str, Any]
    expect: tuple[str, str, Optional[str]]  # verdict, reason code, policy rule
    change: Optional[tuple[str, str, Callable[[Any], None]]] = None  # table, key, edit of the row


@dataclass
class Counts:
    writes: int = 0
    committed: int = 0
    reported: int = 0
    refused_as_in_the_benchmark: int = 0
    mutations: dict[str, list[int]] = field(default_factory=dict)  # name -> [tried, named the rule]
    failures: list[str] = field(default_factory=list)

    def tally(self, name: str, ok: bool, failure: str) -> None:
        entry = self.mutations.setdefault(name, [0, 0])
        entry[0] += 1
        if ok:
            entry[1] += 1
        else:
            self.failures.append(failure)

    def mutation_totals(self) -> tuple[int, int]:
        return sum(t for t, _ in self.mutations.values()), sum(h for _, h in self.mutations.values())


def words(text: str, gate: Gate) -> int:
    return len(gate.render(text)["words"])


def request(gate: Gate, user: str, turn: str, op: str, kwargs: dict[str, Any]) -> dict[str, Any]:
    """One act as a turn: the customer's message holds every address field, pointed at."""
    args = copy.deepcopy(kwargs)
    message = f"Please go ahead with {op}"
    count = words(message, gate)
    for name in ADDRESS:
        text = kwargs.get(name)
        if not isinstance(text, str) or not text:
            continue
        message += f" | {text}"
        first = count + 1
        count += words(text, gate)
        args[name] = {"ptr": [first, count], "copy": text}
    return {
        "conversation": f"c-{turn}",
        "turn": turn,
        "actor": user,
        "at": "2026-11-29T15:00:00Z",
        **CLOCK,
        "entries": [{"kind": "user", "text": message}],
        "acts": [{"op": op, "args": args}],
    }


def confirmation(user: str, turn: str, conversation: str, interaction: str) -> dict[str, Any]:
    return {
        "conversation": conversation,
        "turn": turn,
        "actor": user,
        "at": "2026-11-29T15:01:00Z",
        **CLOCK,
        "answers": [{"interaction": interaction, "option": "confirm"}],
    }


def verdict(response: dict[str, Any]) -> tuple[str, list[str], list[str]]:
    act = response["acts"][0]
    codes = [r["code"] for r in act["reasons"]]
    policies = [p for r in act["reasons"] for p in r.get("policies", [])]
    return act["verdict"], codes, policies


def with_(kwargs: dict[str, Any], **changes: Any) -> dict[str, Any]:
    return {**copy.deepcopy(kwargs), **changes}


def order_mutations(d: Data, user: str, op: str, kwargs: dict[str, Any], order: Any) -> Iterator[Mutation]:
    order_id = kwargs["order_id"]
    status = order["status"] if order else ""
    if "item_ids" not in kwargs:
        other = next((k for k, o in d.orders.items() if o["user_id"] != user and o["status"] == status), None)
        if other is not None:
            yield Mutation("another user's order", with_(kwargs, order_id=other), ("refuse", "unknown_record", None))
    wrong = "delivered" if status == "pending" else "pending"
    rule = "order_not_pending" if "pending" in op else "order_not_delivered"
    yield Mutation(
        "a wrong status",
        copy.deepcopy(kwargs),
        ("refuse", "forbidden_by_policy", rule),
        ("order", order_id, lambda row: row.__setitem__("status", wrong)),
    )
    yield Mutation("an unknown order", with_(kwargs, order_id="#W0000000"), ("refuse", "unknown_record", None))


def item_mutations(d: Data, kwargs: dict[str, Any], order: Any) -> Iterator[Mutation]:
    items = kwargs["item_ids"]
    member = ("refuse", "not_a_member", None)
    yield Mutation("an unknown item", with_(kwargs, item_ids=["0000000000", *items[1:]]), member)
    in_order = [i["item_id"] for i in order["items"]] if order else []
    foreign = next((k for k in d.items if k not in in_order), None)
    if foreign is not None:
        yield Mutation("a foreign item", with_(kwargs, item_ids=[foreign, *items[1:]]), member)
    count = in_order.count(items[0])
    repeated = items + [items[0]] * count
    if "new_item_ids" in kwargs:
        new = kwargs["new_item_ids"]
        changed = with_(kwargs, item_ids=repeated, new_item_ids=new + [new[0]] * count)
    else:
        changed = with_(kwargs, item_ids=repeated)
    yield Mutation("an item beyond its count", changed, member)


def exchange_mutations(d: Data, kwargs: dict[str, Any]) -> Iterator[Mutation]:
    old, new = kwargs["item_ids"], kwargs["new_item_ids"]
    product = d.items[old[0]]["product_id"]
    other = next((k for k, i in d.items.items() if i["product_id"] != product and i["available"] is True), None)
    if other is not None:
        yield Mutation(
            "a new item of another product",
            with_(kwargs, new_item_ids=[other, *new[1:]]),
            ("refuse", "pair_mismatch", None),
        )
    unavailable = next((k for k, i in d.items.items() if i["product_id"] == product and i["available"] is False), None)
    if unavailable is not None:
        yield Mutation(
            "an unavailable new item",
            with_(kwargs, new_item_ids=[unavailable, *new[1:]]),
            ("refuse", "requirement_unmet", None),
        )
    yield Mutation(
        "lists of unequal length", with_(kwargs, new_item_ids=new + [new[0]]), ("refuse", "list_length_mismatch", None)
    )


def payment_mutations(d: Data, user: str, op: str, kwargs: dict[str, Any], order: Any) -> Iterator[Mutation]:
    own = list(d.users[user]["payment_methods"])
    foreign = next(k for u in d.users.values() for k in u["payment_methods"] if k not in own)
    yield Mutation(
        "a foreign payment method", with_(kwargs, payment_method_id=foreign), ("refuse", "not_a_member", None)
    )
    if op in ("modify_pending_order_items", "exchange_delivered_order_items"):
        price = sum(d.items[i]["price"] for i in kwargs["new_item_ids"]) - sum(
            d.items[i]["price"] for i in kwargs["item_ids"]
        )
        gift = next((k for k in own if k.startswith("gift_card_")), None)
        if price > 0 and gift is not None:

            def empty(row: Any, card: str = gift) -> None:
                row["payment_methods"][card]["balance"] = 0

            yield Mutation(
                "a gift card that cannot cover",
                with_(kwargs, payment_method_id=gift),
                ("refuse", "forbidden_by_policy", "gift_card_cannot_cover"),
                ("user", user, empty),
            )
    if op == "return_delivered_order_items":
        history = (order or {}).get("payment_history") or [{}]
        original = history[0].get("payment_method_id", "")
        other = next((k for k in own if k != original and not k.startswith("gift_card_")), None)
        if other is not None:
            yield Mutation(
                "a refund to another method",
                with_(kwargs, payment_method_id=other),
                ("refuse", "forbidden_by_policy", "refund_to_another_method"),
            )


def mutations(d: Data, gate: Gate, user: str, op: str, kwargs: dict[str, Any]) -> Iterator[Mutation]:
    """Versions of one write that each break exactly one precondition, against the rows as they
    stand in the store now."""
    row = gate.record("order", kwargs["order_id"]) if "order_id" in kwargs else None
    order = row["value"] if row else None
    if "order_id" in kwargs:
        yield from order_mutations(d, user, op, kwargs, order)
    if "reason" in kwargs:
        yield Mutation(
            "a reason outside the set", with_(kwargs, reason="changed my mind"), ("refuse", "not_in_closed_set", None)
        )
    if isinstance(kwargs.get("item_ids"), list):
        yield from item_mutations(d, kwargs, order)
    if isinstance(kwargs.get("item_ids"), list) and isinstance(kwargs.get("new_item_ids"), list):
        yield from exchange_mutations(d, kwargs)
    if "payment_method_id" in kwargs:
        yield from payment_mutations(d, user, op, kwargs, order)
    if op == "modify_user_address":
        other = next(k for k in d.users if k != user)
        yield Mutation("another user's address", with_(kwargs, user_id=other), ("refuse", "unknown_record", None))


def try_mutation(gate: Gate, counts: Counts, mutation: Mutation, user: str, op: str, turn: str) -> None:
    saved = None
    if mutation.change:
        table, key, edit = mutation.change
        saved = gate.record(table, key)
        changed = copy.deepcopy(saved["value"])
        edit(changed)
        gate.put_record(table, key, changed, if_match=saved["revision"])
    response = gate.turn(request(gate, user, turn, op, mutation.kwargs))
    if mutation.change and saved:
        table, key, _ = mutation.change
        gate.put_record(table, key, saved["value"])
    got, codes, policies = verdict(response)
    want, code, policy = mutation.expect
    ok = got == want and code in codes and (policy is None or policy in policies) and not response["effects"]
    counts.tally(mutation.name, ok, f"{turn} `{mutation.name}`: expected {mutation.expect}, got {got} {codes} {policies}")


def execute(gate: Gate, counts: Counts, user: str, op: str, kwargs: dict[str, Any], turn: str) -> None:
    """Hold, confirm, execute, report: what an executor does with one write."""
    counts.writes += 1
    held = gate.turn(request(gate, user, turn, op, kwargs))
    got, codes, _ = verdict(held)
    counts.tally("no confirmation", got == "hold" and codes == ["confirmation_required"], f"{turn}: {got} {codes}")
    if got != "hold":
        return
    yes = confirmation(user, f"{turn}-yes", f"c-{turn}", held["interactions"][0]["id"])
    confirmed = gate.turn(yes)
    got, codes, _ = verdict(confirmed)
    if got != "commit" or len(confirmed["effects"]) != 1:
        counts.failures.append(f"{turn} `{op}`: confirmed but {got} {codes}")
        return
    counts.committed += 1
    # The system of record ran the effect as predicted: `done`, no rows of its own to report.
    reported = gate.effect_outcome(confirmed["effects"][0]["id"], "done")
    counts.reported += reported["recorded"] is True


def actor(d: Data, task: dict[str, Any], kwargs: dict[str, Any]) -> str:
    """The customer the task's agent identified: the order's owner, or the user whose address
    changes."""
    if "order_id" in kwargs:
        return d.orders[kwargs["order_id"]]["user_id"]
    return kwargs.get("user_id") or task["user_id"]


def play(task_index: int, task: dict[str, Any], d: Data, counts: Counts, folder: pathlib.Path) -> None:
    writes = [a for a in task["actions"] if a["name"] in WRITES]
    if not writes:
        return
    gate = Gate(RETAIL / "contract.toml", f"sqlite:{folder / f'task-{task_index}.sqlite'}")
    for w, action in enumerate(writes):
        op, kwargs = action["name"], action["kwargs"]
        user = actor(d, task, kwargs)
        turn = f"t{task_index}-w{w}"
        rule = BREAKS_A_PRECONDITION.get((task_index, w))
        if rule is not None:
            got, _, policies = verdict(gate.turn(request(gate, user, turn, op, kwargs)))
            if (got, policies) == ("refuse", [rule]):
                counts.refused_as_in_the_benchmark += 1
            else:
                counts.failures.append(f"{turn}: expected refuse [{rule}], got {got} {policies}")
            continue
        for m, mutation in enumerate(list(mutations(d, gate, user, op, kwargs))):
            try_mutation(gate, counts, mutation, user, op, f"{turn}-m{m}")
        execute(gate, counts, user, op, kwargs, turn)


def run(say: Callable[[str], None] = print) -> Counts:
    d = Data.read()
    tasks = json.loads((RETAIL / "data" / "tasks_test.json").read_text())
    counts = Counts()
    with tempfile.TemporaryDirectory() as folder:
        for t, task in enumerate(tasks):
            before = (counts.committed, counts.mutation_totals()[0], len(counts.failures))
            play(t, task, d, counts, pathlib.Path(folder))
            if counts.mutation_totals()[0] != before[1]:
                failed = len(counts.failures) - before[2]
                say(
                    f"task {t}: {counts.committed - before[0]} writes held, confirmed, executed and reported; "
                    f"{counts.mutation_totals()[0] - before[1]} mutations tried, {failed} failures"
                )
    return counts


def summary(counts: Counts) -> list[str]:
    tried, named = counts.mutation_totals()
    lines = [
        f"retail conformance through Python: {counts.committed} of {counts.writes} τ-bench writes committed "
        f"after confirmation ({counts.reported} outcomes reported); {counts.refused_as_in_the_benchmark} more "
        "refused with the rule the benchmark's own tool enforces"
    ]
    lines += [f"  {name}: {held} of {n} refused or held with the rule's reason" for name, (n, held) in sorted(counts.mutations.items())]
    lines.append(f"  mutations: {named} of {tried} named their broken rule")
    lines += [f"  FAILED {failure}" for failure in counts.failures]
    return lines


if __name__ == "__main__":
    quiet = "--quiet" in sys.argv
    result = run(say=(lambda _: None) if quiet else print)
    print("\n".join(summary(result)))
    sys.exit(1 if result.failures else 0)
