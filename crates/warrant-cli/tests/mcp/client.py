"""The MCP client of the gateway tests: the Python `mcp` package's ClientSession, over stdio or
streamable HTTP, with an elicitation callback that plays the user.

Usage: python client.py PLAN_FILE. The plan (JSON) is a list of sessions, run one after the
other, each:
  {"stdio": [CMD, ARG...], "env": {...}} or {"url": URL, "headers": {...}},
  "decision": the option the user picks in a confirmation form, or null for no elicitation
              capability at all,
  "form": "decline" or "cancel" (optional): the user presses the confirmation form's Decline or
              Cancel instead of picking,
  "words": {ARG: TEXT} the user types into a text form (others keep the offered default),
  "calls": [{"name", "arguments"}],
  "cancel_after": seconds (optional): the user never answers a confirmation, and the client
              cancels each call after this long (a `notifications/cancelled` to the server),
  "server_log": a file the stdio server's standard error is written to (optional)
A call may hold "then_list": true: after it, the client waits (up to 30 s) for the server's
`notifications/tools/list_changed` and lists the tools again, into the result's "tools_after".
A call may hold "before" and "after": commands run to their end just before and just after it,
each {"argv": [...], "stdin": TEXT} (the system of record changing a row beside the gateway);
one that fails ends the session with its standard error.
Prints a JSON list, one object per session: the protocol version, the tool names listed, every
elicitation's message and fields, and each call's isError, text and the fields of the forms
put to the user while it ran ("asked"); or the error that ended it (the gateway killed under it).
"""

import json
import subprocess
import sys

import anyio
from mcp import ClientSession, types
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

plans = json.load(open(sys.argv[1]))
plan = {}
seen = []
changed = None  # an anyio.Event per call, made inside the event loop


async def on_message(message):
    if changed is not None and isinstance(message, types.ToolListChangedNotification):
        changed.set()


async def on_elicit(context, params):
    schema = params.requested_schema
    props = schema.get("properties", {}) if isinstance(schema, dict) else schema.model_dump()["properties"]
    seen.append({"message": params.message, "fields": sorted(props), "schema": props})
    if "decision" in props and plan.get("cancel_after") is not None:
        await anyio.sleep(3600)  # the user walks away; the call is cancelled meanwhile
    if "decision" in props and plan.get("form") is not None:
        return types.ElicitResult(action=plan["form"])
    if "decision" in props:
        return types.ElicitResult(action="accept", content={"decision": plan["decision"]})
    words = plan.get("words", {})
    content = {name: words.get(name, field.get("default", "")) for name, field in props.items()}
    return types.ElicitResult(action="accept", content=content)


def run_all(commands):
    for command in commands:
        done = subprocess.run(command["argv"], input=command.get("stdin", ""), capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"{command['argv']} failed: {done.stdout} {done.stderr}")


async def session(read, write):
    callback = on_elicit if plan.get("decision") is not None else None
    global changed
    async with ClientSession(read, write, elicitation_callback=callback, message_handler=on_message) as s:
        init = await s.initialize()
        tools = await s.list_tools()
        results = []
        for call in plan["calls"]:
            changed = anyio.Event()
            run_all(call.get("before", []))
            asked_from = len(seen)
            if plan.get("cancel_after") is not None:
                r = None
                with anyio.move_on_after(plan["cancel_after"]):
                    r = await s.call_tool(call["name"], call.get("arguments", {}))
                if r is None:
                    results.append({"is_error": True, "text": "", "cancelled": True})
                    continue
            else:
                r = await s.call_tool(call["name"], call.get("arguments", {}))
            texts = [c.text for c in r.content if getattr(c, "type", "") == "text"]
            results.append({"is_error": bool(r.is_error), "text": "\n".join(texts),
                            "asked": [e["fields"] for e in seen[asked_from:]]})
            run_all(call.get("after", []))
            if call.get("then_list"):
                with anyio.move_on_after(30):
                    await changed.wait()
                results[-1]["list_changed"] = changed.is_set()
                results[-1]["tools_after"] = [t.name for t in (await s.list_tools()).tools]
        offered = init.capabilities.model_dump(exclude_none=True)
        return {"protocol": init.protocol_version, "capabilities": sorted(offered),
                "tools": [t.name for t in tools.tools], "results": results}


async def one():
    if "url" in plan:
        import httpx2
        client = httpx2.AsyncClient(headers=plan.get("headers", {}), timeout=60)
        async with streamable_http_client(plan["url"], http_client=client) as (read, write):
            return await session(read, write)
    cmd = plan["stdio"]
    params = StdioServerParameters(command=cmd[0], args=cmd[1:], env=plan.get("env"))
    errlog = open(plan["server_log"], "w") if plan.get("server_log") else sys.stderr
    async with stdio_client(params, errlog=errlog) as (read, write):
        return await session(read, write)


async def main():
    global plan
    outs = []
    for plan in plans:
        seen.clear()
        try:
            out = await one()
        except BaseException as e:  # the gateway killed under the session
            out = {"error": repr(e)}
        out["elicitations"] = list(seen)
        outs.append(out)
    print(json.dumps(outs))


anyio.run(main)
