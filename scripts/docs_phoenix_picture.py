"""docs/traces.md's picture: the support agent's trace in a real Arize Phoenix with the
provenance annotations `explain --phoenix` wrote, written to docs/figures/phoenix-provenance.png.

A local Phoenix (its own virtual environment, scripts/setup.sh installs it), the agent of
examples/otel_agent.py sending its trace there, `mtcabench explain --span 2024-03-05 --phoenix`
on the default model, then the trace's page with the answer's span selected, in headless
Debian Chromium driven by Playwright. Rerun after a change to the annotations:

    python scripts/docs_phoenix_picture.py
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import httpx
from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mtcabench.services.phoenix import local_phoenix  # noqa: E402

OUT = ROOT / "docs" / "figures" / "phoenix-provenance.png"
CHROMIUM = "/usr/bin/chromium"


def main() -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    with tempfile.TemporaryDirectory() as tmp, local_phoenix() as phoenix:
        log = Path(tmp) / "support.otel.json"
        subprocess.run([sys.executable, str(ROOT / "examples" / "otel_agent.py"), "--out",
                        str(log), "--endpoint", phoenix.traces_url], check=True, env=env)
        subprocess.run([sys.executable, "-m", "mtcabench", "explain", str(log), "--span",
                        "2024-03-05", "--phoenix", phoenix.url], env=env, check=True)
        (project,) = [p["id"] for p in httpx.get(f"{phoenix.url}/v1/projects").json()["data"]]
        spans = httpx.get(f"{phoenix.url}/v1/projects/{project}/spans",
                          params={"sort": "start_time", "order": "asc"}).json()["data"]
        answer = [s for s in spans if s["name"].startswith("chat")][-1]
        trace = answer["context"]["trace_id"]
        page_url = f"{phoenix.url}/projects/{project}/traces/{trace}"
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM,
                                        args=["--no-sandbox", "--disable-gpu"])
            page = browser.new_page(viewport={"width": 1500, "height": 950})
            page.goto(f"{page_url}?selectedSpanNodeId={answer['id']}", wait_until="networkidle",
                      timeout=90_000)
            page.wait_for_timeout(4000)
            OUT.parent.mkdir(exist_ok=True)
            page.screenshot(path=str(OUT))
            browser.close()
    print(f"wrote {OUT.relative_to(ROOT)} ({OUT.stat().st_size:,} bytes)")


if __name__ == "__main__":
    main()
