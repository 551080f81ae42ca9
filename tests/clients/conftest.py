"""The real-client suite's table: client × case, printed at the end and written to
$CLIENTS_CACHE/report.{json,md}."""

from __future__ import annotations

import json


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    try:
        import common
    except Exception:  # noqa: BLE001  (the suite could not even start)
        return
    if not common.ROWS:
        return
    common.CLIENTS_CACHE.mkdir(parents=True, exist_ok=True)
    (common.CLIENTS_CACHE / "report.json").write_text(json.dumps(common.ROWS, indent=1))
    md = common.table_markdown(common.ROWS)
    (common.CLIENTS_CACHE / "report.md").write_text(md + "\n")
    tr = terminalreporter
    tr.section("what each real client handed its model (budget 10,000; tokens in the client's encoding)")
    for line in md.splitlines():
        tr.write_line(line)
    tr.write_line(f"(written to {common.CLIENTS_CACHE / 'report.md'})")
