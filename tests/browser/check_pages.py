"""Render the HTML views in headless Chromium; fail on any console error, uncaught script error or
network request; save a full-page screenshot of each. ``nox -s browser`` runs it.

    python tests/browser/check_pages.py [--out DIR] [--chromium PATH]

The pages are made the way a user makes them: the task graph of a run of
examples/intermediate/07_task_graph.py with ``enable_dep_gen`` through ``pypto deps view``, and
the memory map of the seed mixed kernel (examples/advanced/03_mixed_kernel.py, 512 rows) from its
``AllocateMemory`` pass dump through ``python -m pypto.tools.memory_map``.

Chromium is driven over the DevTools protocol on a pipe (``--remote-debugging-pipe``: file
descriptors 3 and 4, one JSON message per NUL-terminated line), so nothing listens on a port and
nothing beyond the standard library is needed. Each page's elements that react to the mouse get
``mouseenter``, ``mouseleave`` and ``click`` events, so that an error in a handler shows too.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import fcntl
import json
import os
import runpy
import select
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent.parent
WINDOW = (1400, 900)
TIMEOUT = 60.0  # seconds for one protocol answer or event
FLAGS = (
    "--headless",
    "--no-sandbox",  # root in a container has no user namespace for the sandbox
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--disable-extensions",
    "--no-first-run",
    "--no-default-browser-check",
    "--hide-scrollbars",
    "--remote-debugging-pipe",
)
# Every element a view gives a mouse handler.
POKE = """
(() => {
  const els = document.querySelectorAll('g.buffer, g.task, g.edge, .stmt, tr[data-buffer], tr[data-task]');
  for (const el of els) {
    for (const kind of ['mouseenter', 'click', 'click', 'mouseleave']) {
      el.dispatchEvent(new MouseEvent(kind, {bubbles: kind === 'click'}));
    }
  }
  return els.length;
})()
"""


class Chromium:
    """One headless Chromium and one page in it, spoken to over the DevTools pipe."""

    def __init__(self, executable: str, profile: Path) -> None:
        to_child, self._to_browser = os.pipe()
        self._from_browser, from_child = os.pipe()

        def pipes_at_3_and_4() -> None:
            # Moved out of the way first: either end may already sit at 3 or 4.
            high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in (to_child, from_child)]
            os.dup2(high[0], 3)
            os.dup2(high[1], 4)

        self.log = (profile / "chromium.log").open("wb")
        self.process = subprocess.Popen(
            [executable, *FLAGS, f"--user-data-dir={profile}", "about:blank"],
            stdin=subprocess.DEVNULL,
            stdout=self.log,
            stderr=self.log,
            close_fds=False,  # os.pipe's ends are close-on-exec; only 3 and 4 reach Chromium
            preexec_fn=pipes_at_3_and_4,
        )
        os.close(to_child)
        os.close(from_child)
        self._next_id = 0
        self._buffer = b""
        self.events: list[dict[str, Any]] = []
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(f"{domain}.enable", session=True)

    def _send(self, message: dict[str, Any]) -> None:
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")

    def _receive(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._from_browser], [], [], left)[0]:
                raise TimeoutError("Chromium did not answer within the time limit")
            chunk = os.read(self._from_browser, 1 << 16)
            if not chunk:
                raise ConnectionError(f"Chromium closed the DevTools pipe (its log: {self.log.name})")
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(line)

    def call(self, method: str, session: bool = False, **params: Any) -> dict[str, Any]:
        """Send one command and return its result; events that arrive meanwhile are kept."""
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params}
        if session:
            message["sessionId"] = self.session
        self._send(message)
        deadline = time.monotonic() + TIMEOUT
        while True:
            answer = self._receive(deadline)
            if answer.get("id") == self._next_id:
                if "error" in answer:
                    raise RuntimeError(f"{method}: {answer['error']}")
                return answer.get("result", {})
            self.events.append(answer)

    def wait_for(self, method: str) -> dict[str, Any]:
        deadline = time.monotonic() + TIMEOUT
        while True:
            for i, event in enumerate(self.events):
                if event.get("method") == method:
                    return self.events.pop(i)
            self.events.append(self._receive(deadline))

    def close(self) -> None:
        with contextlib.suppress(OSError, RuntimeError, TimeoutError, ConnectionError):
            self.call("Browser.close")  # a browser already gone is closed enough
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        os.close(self._to_browser)
        os.close(self._from_browser)
        self.log.close()


def problems(events: list[dict[str, Any]]) -> list[str]:
    """What the page did wrong: console errors, uncaught exceptions, requests beyond file://."""
    found = []
    for event in events:
        method, params = event.get("method"), event.get("params", {})
        if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            text = " ".join(
                str(arg.get("value", arg.get("description", ""))) for arg in params.get("args", [])
            )
            found.append(f"console.{params['type']}: {text}")
        elif method == "Runtime.exceptionThrown":
            details = params.get("exceptionDetails", {})
            description = details.get("exception", {}).get("description") or details.get("text")
            found.append(f"uncaught at line {details.get('lineNumber', 0) + 1}: {description}")
        elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
            found.append(f"browser log error: {params['entry'].get('text')} {params['entry'].get('url', '')}")
        elif method == "Network.requestWillBeSent":
            url = params.get("request", {}).get("url", "")
            if not url.startswith(("file:", "data:", "about:")):
                found.append(f"network request: {url}")
    return found


def render(browser: Chromium, page: Path, screenshot: Path) -> list[str]:
    """Load ``page``, poke its handlers, save a full-page screenshot; the problems seen."""
    browser.events.clear()
    width, height = WINDOW
    browser.call(
        "Emulation.setDeviceMetricsOverride",
        session=True,
        width=width,
        height=height,
        deviceScaleFactor=1,
        mobile=False,
    )
    browser.call("Page.navigate", session=True, url=page.resolve().as_uri())
    browser.wait_for("Page.loadEventFired")
    poked = browser.call("Runtime.evaluate", session=True, expression=POKE, returnByValue=True)
    if poked.get("exceptionDetails"):
        browser.events.append({"method": "Runtime.exceptionThrown", "params": poked})
    metrics = browser.call("Page.getLayoutMetrics", session=True)["cssContentSize"]
    clip = {"x": 0, "y": 0, "width": max(metrics["width"], width), "height": metrics["height"], "scale": 1}
    shot = browser.call(
        "Page.captureScreenshot", session=True, format="png", captureBeyondViewport=True, clip=clip
    )
    screenshot.write_bytes(base64.b64decode(shot["data"]))
    browser.call("Runtime.evaluate", session=True, expression="0")  # collect events still in flight
    return problems(browser.events)


def run(command: list[str], cwd: Path) -> None:
    print("$", " ".join(command), flush=True)
    subprocess.run(command, cwd=cwd, check=True)


def make_pages(work: Path) -> list[Path]:
    """The pages a user would make: the task graph of example 07 and the seed kernel's memory map."""
    import torch

    from pypto.runtime import RunConfig

    example = runpy.run_path(str(ROOT / "examples" / "intermediate" / "07_task_graph.py"), run_name="browser")
    x, y = torch.randn(128, 128), torch.randn(128, 128)
    config = RunConfig(platform="a2a3sim", enable_dep_gen=True, save_kernels_dir=work / "task_graph")
    example["task_graph"](x, y, torch.zeros(128, 128), torch.zeros(128, 128), config=config)
    pypto = [sys.executable, "-m", "pypto"]
    run(
        [*pypto, "deps", "view", "task_graph/dfx_outputs/deps.json", "--format", "html", "-o", "deps.html"],
        work,
    )
    run(
        [*pypto, "deps", "view", "task_graph/dfx_outputs/deps.json", "--format", "svg", "-o", "deps.svg"],
        work,
    )
    seed = f"{ROOT / 'examples' / 'advanced' / '03_mixed_kernel.py'}::mixed_matmul_bias"
    shapes = ["a=fp16[512,256]", "b=fp16[256,128]", "bias=fp32[512,128]", "out=fp32[512,128]"]
    arguments = [word for shape in shapes for word in ("--arg", shape)]
    run([*pypto, "compile", seed, *arguments, "--dump-passes", "dumps", "--emit", "report"], work)
    (dump,) = (work / "dumps").glob("*_after_AllocateMemory.py")
    run([sys.executable, "-m", "pypto.tools.memory_map", str(dump), "-o", "memory_map.html"], work)
    return [work / "deps.html", work / "deps.svg", work / "memory_map.html"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--out", type=Path, default=ROOT / ".nox" / "browser" / "screenshots", help="screenshots here"
    )
    parser.add_argument(
        "--chromium", default=os.environ.get("CHROMIUM", "chromium"), help="the browser to run"
    )
    args = parser.parse_args()
    executable = shutil.which(args.chromium)
    if executable is None:
        print(
            f"error: no Chromium at {args.chromium!r}: install it (Debian: apt-get install -y chromium) "
            "or name it with --chromium PATH or CHROMIUM=PATH",
            file=sys.stderr,
        )
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    failed = False
    with tempfile.TemporaryDirectory(prefix="pypto-browser-") as scratch:
        work, profile = Path(scratch) / "pages", Path(scratch) / "profile"
        work.mkdir()
        profile.mkdir()
        pages = make_pages(work)
        browser = Chromium(executable, profile)
        try:
            for page in pages:
                shutil.copyfile(page, args.out / page.name)
                screenshot = args.out / f"{page.stem}{page.suffix.replace('.', '-')}.png"
                found = render(browser, page, screenshot)
                print(f"{page.name}: {'FAILED' if found else 'ok'}, screenshot {screenshot}")
                for problem in found:
                    print(f"  {problem}")
                failed = failed or bool(found)
        finally:
            browser.close()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
