"""Real-browser fixtures: headless Chromium (Debian's `chromium` + `chromium-driver`) driven by
Selenium, against `ragpg serve`'s app under uvicorn on a loopback port.

Chromium comes from the OS packages. When it is missing and the tests run as root, the set-up
installs it once with apt-get; when that is impossible the browser tests are skipped with the
reason. Screenshots go to the test's tmp_path; with RAGPG_SCREENSHOTS_DIR set they are also
copied there (that is how docs/img/ is refreshed).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from rag.config import Settings
from rag.runtime import Runtime

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")
DRIVER_PATHS = ("/usr/bin/chromedriver", "/usr/lib/chromium/chromedriver")
APT_PACKAGES = ("chromium", "chromium-driver")
APT_TIMEOUT_S = 600
SERVER_START_S = 20
WINDOW = (1100, 1000)
_install_tried: list[str] = []


def _find() -> tuple[str | None, str | None]:
    browser = next((p for n in CHROMIUM_NAMES if (p := shutil.which(n))), None)
    driver = shutil.which("chromedriver") or next((p for p in DRIVER_PATHS if Path(p).exists()), None)
    return browser, driver


def _try_install() -> str:
    """apt-get install the OS packages once per session; returns why it could not, or ''."""
    if _install_tried:
        return _install_tried[0]
    reason = ""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        reason = "Chromium not found and not root, so it cannot be installed (apt-get install chromium chromium-driver)"
    elif not shutil.which("apt-get"):
        reason = "Chromium not found and there is no apt-get to install it"
    else:
        try:
            env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
            subprocess.run(["apt-get", "update", "-qq"], check=False, capture_output=True, timeout=APT_TIMEOUT_S, env=env)
            done = subprocess.run(["apt-get", "install", "-y", "-qq", *APT_PACKAGES], capture_output=True, text=True,
                                  timeout=APT_TIMEOUT_S, env=env)
            if done.returncode != 0:
                reason = f"apt-get install {' '.join(APT_PACKAGES)} failed: {done.stderr.strip()[-200:]}"
        except (OSError, subprocess.TimeoutExpired) as exc:
            reason = f"apt-get install {' '.join(APT_PACKAGES)} failed: {exc}"
    _install_tried.append(reason)
    return reason


@pytest.fixture(scope="session")
def chromium_paths() -> tuple[str, str]:
    try:
        import selenium  # noqa: F401
    except ImportError:
        pytest.skip("selenium is not installed (pip install -e '.[dev]')")
    browser, driver = _find()
    if not (browser and driver):
        reason = _try_install()
        browser, driver = _find()
        if not (browser and driver):
            pytest.skip(reason or "Chromium or chromedriver not found after installing them")
    return browser, driver


@pytest.fixture
def browser(chromium_paths: tuple[str, str]) -> Iterator[object]:
    from selenium import webdriver
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.chrome.service import Service

    binary, driver = chromium_paths
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                f"--window-size={WINDOW[0]},{WINDOW[1]}", "--no-first-run", "--disable-extensions",
                "--disable-background-networking", "--disable-component-update", "--disable-sync"):
        options.add_argument(arg)
    try:
        drv = webdriver.Chrome(service=Service(executable_path=driver), options=options)
    except WebDriverException as exc:
        pytest.skip(f"headless Chromium did not start: {str(exc).splitlines()[0]}")
    drv.implicitly_wait(0)
    try:
        yield drv
    finally:
        drv.quit()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def live_server(settings: Settings) -> Iterator[str]:
    """The app under uvicorn on 127.0.0.1 (a thread), as `ragpg serve` runs it; yields its base URL."""
    import uvicorn

    from rag.notes.settings import NotesSettings
    from ragpg_server.app import create_app, pool_size_for
    from tests.notes.kit import ABSTAIN

    port = _free_port()
    # the app answers only the Host names of the address it is bound to, as under `ragpg serve`
    s = settings.model_copy(update={"notes": NotesSettings(**ABSTAIN),
                                    "server": settings.server.model_copy(update={"host": "127.0.0.1", "port": port})})
    runtime = Runtime.from_settings(s, pool_max_size=pool_size_for(s.server.concurrency))
    server = uvicorn.Server(uvicorn.Config(create_app(runtime), host="127.0.0.1", port=port, log_level="warning",
                                           lifespan="on"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + SERVER_START_S
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the test server did not start")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=SERVER_START_S)
        runtime.close()


@pytest.fixture
def screenshot(browser, tmp_path: Path):
    """`screenshot(name)`: a PNG of the page under tmp_path (and RAGPG_SCREENSHOTS_DIR when set)."""
    def take(name: str) -> Path:
        path = tmp_path / f"{name}.png"
        browser.save_screenshot(str(path))
        extra = os.environ.get("RAGPG_SCREENSHOTS_DIR")
        if extra:
            Path(extra).mkdir(parents=True, exist_ok=True)
            shutil.copy(path, Path(extra) / path.name)
        return path

    return take
