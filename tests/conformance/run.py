#!/usr/bin/env python3
"""The official MCP conformance suite through every face of mcp-budget (tests/conformance/run.sh
installs the suite and sets the variables this reads).

Server scenarios (`conformance server --suite all`, every one, the pending ones too) run
against three faces, all in front of `mcp-budget fixture-server --conformance` (a stdio server
written from the suite's requirement texts):

- `serve`: `mcp-budget serve -- <the fixture>`;
- `serve --upstream`: `mcp-budget serve --upstream <the first face's URL>`;
- `serve -- proxy --upstream`: `mcp-budget serve -- mcp-budget proxy --upstream <the same>`.

The same scenarios run against a second server, written on the official Python MCP SDK
(server.py, mcp 2.3.0 from tests/e2e/requirements.txt): direct over its own Streamable HTTP
(the baseline: the suite against no mcp-budget at all), and through the same three faces, with
`serve --upstream` and `serve -- proxy --upstream` in front of that SDK's own HTTP transport
(its SSE streams, event ids, priming events and resumption). A scenario that passes direct and
fails through a face fails the run like any other failure; checks whose verdict differs from
the direct one (a SUCCESS that becomes a WARNING, say) are listed under the table.

Client scenarios (`conformance client`, every one) run with `mcp-budget proxy --upstream` as
the client under test (client.py drives it).

A scenario fails when the suite says it failed (a FAILURE check; WARNINGs are the suite's
SHOULDs and are shown, not failed). A failure not listed in expected-failures.yml, or a listed
one that passes, fails the run. The table goes to stdout and to $CONFORMANCE_CACHE/report.md.
"""

import concurrent.futures
import json
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
CACHE = Path(os.environ["CONFORMANCE_CACHE"])
NODE = os.environ["CONFORMANCE_NODE"]
SUITE = os.environ["CONFORMANCE_SUITE"]
BIN = os.environ["MCP_BUDGET_BIN"]
# The Python of tests/e2e's venv (the official Python MCP SDK, pinned), for server.py.
SDK_PYTHON = os.environ["CONFORMANCE_PYTHON"]
# Suite 0.1.16 never ends its sessions (no DELETE): one server run holds 32 of them, exactly
# serve's default --max-sessions. More room, so the run never meets the 33rd's 503.
MAX_SESSIONS = "200"
CLIENT_TIMEOUT_MS = "60000"
PARALLEL_CLIENTS = 4

FACES = ["serve", "serve --upstream", "serve -- proxy --upstream"]
# The faces in front of server.py (the Python SDK's server); the first is that server alone.
SDK_FACES = ["sdk direct", "sdk serve", "sdk serve --upstream", "sdk serve -- proxy --upstream"]
ALL_FACES = FACES + SDK_FACES
SUMMARY = re.compile(r"^[✓✗] (\S+): (\d+) passed, (\d+) failed", re.M)
CLIENT_PASSED = re.compile(r"^Passed: (\d+)/(\d+), (\d+) failed, (\d+) warnings", re.M)


def expected_failures():
    """`{"server": {name: why}, "client": {name: why}}` from expected-failures.yml (the suite's
    own format: a list a mode; the comment after each entry is its reason)."""
    listed = {"server": {}, "client": {}}
    mode = None
    for line in (HERE / "expected-failures.yml").read_text().splitlines():
        if re.match(r"^(server|client):", line):
            mode = line.split(":")[0]
        elif mode and (m := re.match(r"^\s+-\s+(\S+)\s*(?:#\s*(.*))?$", line)):
            listed[mode][m.group(1)] = m.group(2) or ""
    return listed


def scenarios():
    out = subprocess.run([NODE, SUITE, "list"], capture_output=True, text=True, check=True).stdout
    server, client, mode = [], [], None
    for line in out.splitlines():
        if line.startswith("Server scenarios"):
            mode = server
        elif line.startswith("Client scenarios"):
            mode = client
        elif mode is not None and (m := re.match(r"^\s+- (\S+)", line)):
            mode.append(m.group(1))
    return server, client


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(args, name):
    log = open(CACHE / f"{name}.log", "w")
    process = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
    return process


def wait_listening(port, process):
    deadline = time.time() + 30
    while time.time() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"a face exited at start (status {process.returncode})")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    raise SystemExit(f"nothing listens on port {port}")


def face_dir(face):
    return CACHE / "results" / re.sub(r"[^a-z]+", "-", face)


def checks_of(face, scenario):
    """`({check id: (status, error message)}, [notes])` of one scenario through one face, from
    the suite's checks.json: the verdicts (a repeated id keeps its last one), and the messages
    of its INFO checks (why a check was not made, say)."""
    found, notes = {}, []
    for path in sorted(face_dir(face).glob(f"results/server-{scenario}-*/checks.json")):
        for check in json.loads(path.read_text()):
            if check.get("status") != "INFO":
                found[check["id"]] = (check["status"], check.get("errorMessage") or "")
            elif isinstance(check.get("details"), dict) and check["details"].get("message"):
                notes.append(check["details"]["message"])
    return found, notes


def run_server_suite(face, url):
    cwd = face_dir(face)
    cwd.mkdir(parents=True, exist_ok=True)
    started = time.time()
    out = subprocess.run([NODE, SUITE, "server", "--url", url, "--suite", "all",
                          "-o", str(cwd / "results")], cwd=cwd,
                         capture_output=True, text=True, timeout=900)
    (cwd / "output.txt").write_text(out.stdout + out.stderr)
    # name -> (no check failed, checks passed); a scenario of WARNINGs only passes 0 checks.
    found = {m.group(1): (int(m.group(3)) == 0, int(m.group(2)))
             for m in SUMMARY.finditer(out.stdout)}
    return found, time.time() - started


def run_client_scenario(name):
    cwd = CACHE / "results" / "client" / name.replace("/", "-")
    cwd.mkdir(parents=True, exist_ok=True)
    command = f"{sys.executable} {HERE / 'client.py'}"
    try:
        out = subprocess.run([NODE, SUITE, "client", "--command", command, "--scenario", name,
                              "--timeout", CLIENT_TIMEOUT_MS], cwd=cwd, capture_output=True,
                             text=True, timeout=180)
        text = out.stdout + out.stderr
    except subprocess.TimeoutExpired as e:
        text = f"timed out\n{e.stdout or ''}"
    (cwd / "output.txt").write_text(text)
    m = CLIENT_PASSED.search(text)
    passed = bool(m) and int(m.group(3)) == 0 and "OVERALL: PASSED" in text
    detail = f"{m.group(1)}/{m.group(2)} checks" + (f", {m.group(4)} warnings" if m and m.group(4) != "0" else "") if m else "no result"
    return name, passed, detail


def main():
    expected = expected_failures()
    server_names, client_names = scenarios()
    processes = []
    problems = []
    rows = []
    disagreements = []
    try:
        ports = [free_port() for _ in FACES]
        urls = [f"http://127.0.0.1:{p}/mcp" for p in ports]
        fixture = [BIN, "fixture-server", "--conformance"]
        common = ["--max-sessions", MAX_SESSIONS]
        commands = [
            [BIN, "serve", "--listen", f"127.0.0.1:{ports[0]}", *common, "--", *fixture],
            [BIN, "serve", "--listen", f"127.0.0.1:{ports[1]}", *common, "--upstream", urls[0]],
            [BIN, "serve", "--listen", f"127.0.0.1:{ports[2]}", *common, "--",
             BIN, "proxy", "--upstream", urls[0]],
        ]
        # The Python SDK's server: its own HTTP first (the direct face), then the same three.
        sdk_ports = [free_port() for _ in SDK_FACES]
        sdk_urls = [f"http://127.0.0.1:{p}/mcp" for p in sdk_ports]
        # --dynamic-after 0: no list-changed notification lands in some scenario's stream.
        sdk_server = [SDK_PYTHON, str(HERE / "server.py"), "--dynamic-after", "0"]
        commands += [
            [*sdk_server, "--http", str(sdk_ports[0])],
            [BIN, "serve", "--listen", f"127.0.0.1:{sdk_ports[1]}", *common, "--", *sdk_server],
            [BIN, "serve", "--listen", f"127.0.0.1:{sdk_ports[2]}", *common, "--upstream", sdk_urls[0]],
            [BIN, "serve", "--listen", f"127.0.0.1:{sdk_ports[3]}", *common, "--",
             BIN, "proxy", "--upstream", sdk_urls[0]],
        ]
        ports += sdk_ports
        urls += sdk_urls
        for i, command in enumerate(commands):
            processes.append(start(command, f"face-{i}"))
            wait_listening(ports[i], processes[-1])
        results = {}
        # The faces side by side (each its own server processes and sessions).
        with concurrent.futures.ThreadPoolExecutor(len(ALL_FACES)) as pool:
            runs = dict(zip(ALL_FACES, pool.map(run_server_suite, ALL_FACES, urls)))
        for face in ALL_FACES:
            results[face], took = runs[face]
            print(f"conformance: server scenarios through `{face}`: {took:.1f} s", file=sys.stderr)
        for name in server_names:
            base, _ = checks_of(SDK_FACES[0], name)
            for face in SDK_FACES[1:]:
                through, notes = checks_of(face, name)
                for check, (status, _) in base.items():
                    got, message = through.get(check, ("absent", "; ".join(notes)))
                    if got != status:
                        disagreements.append((name, face, check, status, got, message))
                for check, (got, message) in through.items():
                    if check not in base:
                        disagreements.append((name, face, check, "absent", got, message))
        for name in server_names:
            cells = []
            warned = []
            for face in ALL_FACES:
                ok, passed = results[face].get(name, (False, 0))
                if ok and passed == 0:
                    warned.append(face)
                cells.append("✔" if ok else "✘")
                why = expected["server"].get(name)
                if not ok and why is None:
                    problems.append(f"server scenario {name} fails through `{face}`")
                if ok and why is not None and face == FACES[0]:
                    problems.append(f"server scenario {name} passes but is listed as expected to fail")
            note = expected["server"].get(name)
            note = f"expected to fail: {note}" if note is not None else ""
            if warned:
                note += "no check passed or failed (the suite found nothing to check, or only \
SHOULDs) through " + ", ".join(f"`{f}`" for f in warned) + f": see {CACHE.name}/results"
            rows.append(("server", name, cells, note))
    finally:
        for p in processes:
            p.terminate()
        for p in processes:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()

    started = time.time()
    with concurrent.futures.ThreadPoolExecutor(PARALLEL_CLIENTS) as pool:
        client_results = list(pool.map(run_client_scenario, client_names))
    print(f"conformance: client scenarios: {time.time() - started:.1f} s", file=sys.stderr)
    for name, passed, detail in client_results:
        why = expected["client"].get(name)
        if not passed and why is None:
            problems.append(f"client scenario {name} fails with `proxy --upstream` ({detail})")
        if passed and why is not None:
            problems.append(f"client scenario {name} passes but is listed as expected to fail")
        note = f"expected to fail: {why}; {detail}" if why is not None else detail
        rows.append(("client", name, ["✔" if passed else "✘"], note))

    lines = ["Faces: `serve`, `serve --upstream`, `serve -- proxy --upstream` in front of "
             "`mcp-budget fixture-server --conformance`; `sdk …`: the Python SDK's server "
             "(server.py), direct over its own HTTP and through the same three faces.", "",
             "| kind | scenario | " + " | ".join(f"`{f}`" for f in ALL_FACES) + " | note |",
             "|---|---|" + "---|" * len(ALL_FACES) + "---|"]
    for kind, name, cells, note in rows:
        if kind == "client":
            cells = [f"{cells[0]} (`proxy --upstream`)"] + [""] * (len(ALL_FACES) - 1)
        lines.append(f"| {kind} | {name} | " + " | ".join(cells) + f" | {note} |")
    if disagreements:
        lines += ["", "Checks whose verdict through a face differs from `sdk direct` "
                  "(a FAILURE also fails the run above; a WARNING is a SHOULD):", "",
                  "| scenario | face | check | direct | through the face | message |",
                  "|---|---|---|---|---|---|"]
        for name, face, check, want, got, message in disagreements:
            lines.append(f"| {name} | `{face}` | {check} | {want} | {got} | {message} |")
    server_ok = sum(all(c == "✔" for c in r[2]) for r in rows if r[0] == "server")
    client_ok = sum(r[2][0] == "✔" for r in rows if r[0] == "client")
    lines.append("")
    lines.append(f"server scenarios passing through every face: {server_ok}/{len(server_names)}; "
                 f"client scenarios passing: {client_ok}/{len(client_names)}")
    report = "\n".join(lines) + "\n"
    (CACHE / "report.md").write_text(report)
    print(report)
    for problem in problems:
        print(f"conformance: FAIL: {problem}", file=sys.stderr)
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
