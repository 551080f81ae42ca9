#!/usr/bin/env python3
"""The client the conformance suite runs for its client scenarios (`conformance client
--command "python3 client.py" --scenario NAME`; the suite appends the server URL).

The client under test is `mcp-budget proxy --upstream <URL>`: this script is only the MCP
client in front of it (newline-delimited JSON-RPC on the proxy's stdio, the standard library
only). It initializes (offering sampling and elicitation), lists the tools and calls each with
arguments made from its input schema, answers elicitations with the schema's defaults, and
exits non-zero when a request it sent is answered with an error.

`MCP_CONFORMANCE_CONTEXT` (JSON) is mapped onto the proxy's sign-in options: `client_id`,
`client_secret` (environment variables, never argv), `private_key_pem` (the variable takes
the PEM itself); sign-ins are approved without a browser (`MCP_BUDGET_OAUTH_AUTOAPPROVE=1`, a
test aid) and kept in a directory of this run only. Every `auth/*` scenario also gets
`--oauth-client-metadata-url`, the URL the suite's CIMD scenario expects a client to use.
"""

import json
import os
import queue
import subprocess
import sys
import tempfile
import threading

# The URL auth/basic-cimd expects as a client ID (the suite's own constant; it is never fetched).
CIMD_URL = "https://conformance-test.local/client-metadata.json"
TIMEOUT_S = 60


def argument_for(schema):
    kind = (schema or {}).get("type")
    if "default" in (schema or {}):
        return schema["default"]
    return {"number": 5, "integer": 3, "boolean": True, "string": "hello",
            "array": [], "object": {}}.get(kind, "hello")


def arguments_for(tool):
    schema = tool.get("inputSchema") or {}
    properties = schema.get("properties") or {}
    return {name: argument_for(p) for name, p in properties.items()}


def elicitation_answer(params):
    """Accepts with every field that has a default set to it (SEP-1034: a client applies
    the defaults the user did not change)."""
    properties = ((params or {}).get("requestedSchema") or {}).get("properties") or {}
    content = {k: p["default"] for k, p in properties.items() if "default" in p}
    return {"action": "accept", "content": content}


def main():
    url = sys.argv[-1]
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    binary = os.environ.get("MCP_BUDGET_BIN") or "mcp-budget"
    args = [binary, "proxy", "--upstream", url]
    if scenario.startswith("auth/"):
        args += ["--oauth-client-metadata-url", CIMD_URL]
    env = dict(os.environ)
    env.pop("MCP_BUDGET_UPSTREAM", None)
    env.pop("MCP_BUDGET_HEADERS", None)
    env["MCP_BUDGET_OAUTH_AUTOAPPROVE"] = "1"
    env["MCP_BUDGET_OAUTH_DIR"] = tempfile.mkdtemp(prefix="conformance-oauth-")
    for key, var in [("client_id", "MCP_BUDGET_OAUTH_CLIENT_ID"),
                     ("client_secret", "MCP_BUDGET_OAUTH_CLIENT_SECRET"),
                     ("private_key_pem", "MCP_BUDGET_OAUTH_PRIVATE_KEY")]:
        if context.get(key):
            env[var] = context[key]

    proxy = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env,
                             text=True, bufsize=1)
    lines = queue.Queue()

    def read():
        for line in proxy.stdout:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=read, daemon=True).start()

    def send(message):
        proxy.stdin.write(json.dumps(message) + "\n")
        proxy.stdin.flush()

    def request(rid, method, params):
        send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        while True:
            line = lines.get(timeout=TIMEOUT_S)
            if line is None:
                raise SystemExit(f"the proxy closed its stdout before answering {method}")
            message = json.loads(line)
            if "method" in message and "id" in message:
                # A request of the server's, relayed by the proxy.
                if message["method"] == "elicitation/create":
                    result = elicitation_answer(message.get("params"))
                elif message["method"] == "sampling/createMessage":
                    result = {"role": "assistant", "model": "conformance",
                              "content": {"type": "text", "text": "ok"}}
                elif message["method"] == "roots/list":
                    result = {"roots": []}
                else:
                    result = {}
                send({"jsonrpc": "2.0", "id": message["id"], "result": result})
                continue
            if message.get("id") == rid:
                print(f"{method}: {json.dumps(message)[:400]}", file=sys.stderr)
                return message

    failed = False
    answer = request(1, "initialize", {
        "protocolVersion": "2025-11-25",
        "capabilities": {"sampling": {}, "elicitation": {"form": {}}, "roots": {}},
        "clientInfo": {"name": "mcp-budget-conformance-client", "version": "1.0.0"}})
    failed |= "error" in answer
    if not failed:
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        listed = request(2, "tools/list", {})
        failed |= "error" in listed
        for n, tool in enumerate((listed.get("result") or {}).get("tools") or []):
            called = request(3 + n, "tools/call",
                             {"name": tool["name"], "arguments": arguments_for(tool)})
            failed |= "error" in called
    proxy.stdin.close()
    try:
        proxy.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proxy.kill()
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
