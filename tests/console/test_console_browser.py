"""The console in a real browser (Debian's chromium, headless, through Selenium
and chromedriver): log in, watch a bridge's decision arrive live, resolve a dead
letter, approve a hook and see the next decision change, and a read-only token
that cannot act. Each view is saved as a screenshot (``$INTERLOCK_ARTIFACTS``,
else the test's temp dir)."""

from __future__ import annotations

import http.client
import json
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import Served

webdriver = pytest.importorskip("selenium.webdriver", reason="pip install selenium")
from selenium.webdriver.common.by import By  # noqa: E402

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
pytestmark = [
    pytest.mark.skipif(CHROMIUM is None or DRIVER is None,
                       reason="needs Debian's chromium and chromium-driver (.ci/run installs "
                              "them: apt-get install chromium chromium-driver)"),
]


@pytest.fixture(scope="module")
def chromium(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One browser for the module (it takes seconds to start); each test's server
    is a new origin, so no test sees another's login."""
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1400,900", f"--user-data-dir={tmp_path_factory.mktemp('chrome')}",
                "--no-first-run", "--disable-extensions", "--disable-background-networking",
                "--disable-component-update", "--disable-sync"):
        options.add_argument(arg)
    os.environ.setdefault("SE_OFFLINE", "true")  # never let Selenium fetch a driver
    driver = webdriver.Chrome(service=Service(executable_path=DRIVER), options=options)
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture
def browser(chromium: Any, served: Served) -> Iterator[Any]:
    """The module's browser for one test. It leaves the page before the test's server
    stops, so no open event stream holds up the server's shutdown."""
    yield chromium
    chromium.get("about:blank")


@pytest.fixture
def shots(tmp_path: Path) -> Callable[[Any, str], Path]:
    folder = Path(os.environ.get("INTERLOCK_ARTIFACTS") or tmp_path / "screenshots")
    folder.mkdir(parents=True, exist_ok=True)

    def take(driver: Any, name: str) -> Path:
        path = folder / f"console-{name}.png"
        assert driver.save_screenshot(str(path))
        assert path.stat().st_size > 1000
        return path

    return take


def until(driver: Any, check: Callable[[], Any], what: str, seconds: float = 20) -> Any:
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, seconds, poll_frequency=0.1).until(
        lambda _d: check(), message=f"timed out waiting for {what}")


def login(driver: Any, served: Served, token: str) -> None:
    driver.get(served.url + "/ui/")
    until(driver, lambda: driver.find_element(By.ID, "token").is_displayed(), "the login form")
    driver.find_element(By.ID, "token").send_keys(token)
    driver.find_element(By.CSS_SELECTOR, "#login-form button").click()
    until(driver, lambda: driver.find_element(By.ID, "tabs").is_displayed(), "the tabs")


def bridge_call(served: Served, command: str) -> dict[str, Any]:
    call = {"hook_event_name": "PreToolUse", "tool_name": "Bash", "session_id": "claude-7",
            "tool_input": {"command": command}, "cwd": str(served.root)}
    conn = http.client.HTTPConnection("127.0.0.1", served.port, timeout=30)
    try:
        conn.request("POST", "/v1/bridge/claude", body=json.dumps(call),
                     headers={"Authorization": f"Bearer {served.events}",
                              "Content-Type": "application/json"})
        resp = conn.getresponse()
        assert resp.status == 200
        out: dict[str, Any] = json.loads(resp.read())
        return out
    finally:
        conn.close()


def rows(driver: Any) -> list[str]:
    return [r.text for r in driver.find_elements(By.CSS_SELECTOR, "#rows .row")]


def test_a_bridge_decision_appears_live_and_opens_its_record(
        browser: Any, served: Served, shots: Callable[[Any, str], Path]) -> None:
    login(browser, served, served.admin)
    until(browser, lambda: browser.find_element(By.ID, "live").text == "live", "the stream")
    bridge_call(served, "rm -rf build/")
    found = until(browser, lambda: [r for r in rows(browser) if "rm -rf build/" in r],
                  "the bridge's decision in the list")
    assert "block" in found[0]
    assert "project:no-rm" in found[0]
    shots(browser, "decisions")
    browser.find_element(By.CSS_SELECTOR, "#rows .row").click()
    until(browser, lambda: browser.find_element(By.ID, "detail").is_displayed(), "the record")
    assert "project:no-rm" in browser.find_element(By.ID, "detail-hooks").text
    assert '"platform": "claude"' in browser.find_element(By.ID, "detail-json").text
    shots(browser, "decision-detail")


def test_revoking_and_approving_a_hook_in_the_page_changes_the_next_decision(
        browser: Any, served: Served, shots: Callable[[Any, str], Path]) -> None:
    assert bridge_call(served, "ls")["decision"] == "none"
    login(browser, served, served.admin)
    browser.find_element(By.CSS_SELECTOR, '#tabs [data-view="hooks"]').click()

    def action(name: str) -> Any:
        found = until(browser, lambda: browser.find_elements(
            By.CSS_SELECTOR, f'[data-hook="project:no-rm"] [data-action="{name}"]'),
            f"the {name} button")
        return found[0]

    action("revoke").click()
    action("approve")  # the table was redrawn with the hook unapproved
    before = bridge_call(served, "ls")
    assert before["decision"] == "block"  # unapproved, and it fails closed
    assert "unapproved" in before["reason"]
    shots(browser, "hooks")
    action("approve").click()
    action("revoke")
    assert "approved" in browser.find_element(By.CSS_SELECTOR, '[data-hook="project:no-rm"]').text
    assert bridge_call(served, "ls")["decision"] == "none"
    assert bridge_call(served, "rm x")["reason"] == "no rm here"


def test_resolving_a_dead_letter_in_the_page(
        browser: Any, served: Served, shots: Callable[[Any, str], Path]) -> None:
    assert bridge_call(served, "crash please")["decision"] == "block"
    login(browser, served, served.admin)
    browser.find_element(By.CSS_SELECTOR, '#tabs [data-view="deadletters"]').click()

    def listed() -> list[Any]:
        browser.find_element(By.ID, "dl-all").click()  # each click reloads the list
        browser.find_element(By.ID, "dl-all").click()
        return browser.find_elements(By.CSS_SELECTOR, "[data-resolve]")

    until(browser, listed, "the dead letter")
    shots(browser, "deadletters")
    browser.find_element(By.ID, "dl-note").send_keys("hook fixed")

    def resolve() -> bool:
        # The list may still be redrawing from the last reload: find the button anew.
        from selenium.common.exceptions import StaleElementReferenceException

        try:
            browser.find_elements(By.CSS_SELECTOR, "[data-resolve]")[0].click()
        except (StaleElementReferenceException, IndexError):
            return False
        return True

    until(browser, resolve, "a resolve button that stays put")
    until(browser, lambda: not browser.find_elements(By.CSS_SELECTOR, "[data-resolve]"),
          "the resolve")
    browser.find_element(By.ID, "dl-all").click()
    until(browser, lambda: "console:oncall hook fixed" in browser.find_element(
        By.ID, "dl-table").text, "the resolved record")


def test_a_read_only_token_sees_no_actions_and_the_health_view(
        browser: Any, served: Served, shots: Callable[[Any, str], Path]) -> None:
    bridge_call(served, "rm -rf /")
    bridge_call(served, "ls")
    login(browser, served, served.read)
    browser.find_element(By.CSS_SELECTOR, '#tabs [data-view="hooks"]').click()
    until(browser, lambda: browser.find_elements(By.CSS_SELECTOR, '[data-hook="project:no-rm"]'),
          "the hooks table")
    assert browser.find_elements(By.CSS_SELECTOR, "[data-action]") == []
    # Even a hand-made request from the page is refused: the role, not the page, decides.
    status = browser.execute_async_script("""
        const done = arguments[arguments.length - 1];
        fetch('/ui/api/session').then(r => r.json()).then(s =>
          fetch('/ui/api/hooks/project:no-rm/revoke',
                {method: 'POST', headers: {'X-CSRF-Token': s.csrf}}))
          .then(r => done(r.status));""")
    assert status == 403
    browser.find_element(By.CSS_SELECTOR, '#tabs [data-view="health"]').click()
    until(browser, lambda: browser.find_elements(By.CSS_SELECTOR, "#chart-decisions svg"),
          "the chart")
    assert "claude" in browser.find_element(By.ID, "health-cards").text
    shots(browser, "health")


def test_ten_thousand_decisions_keep_the_page_to_a_screenful_of_rows(
        browser: Any, served: Served) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", served.port, timeout=60)
    body = json.dumps({"tool_name": "read_file", "args": {"path": "README.md"}})
    headers = {"Authorization": f"Bearer {served.events}", "Content-Type": "application/json"}
    for _ in range(10_000):  # read_file: only the user's in-process hook runs
        conn.request("POST", "/v1/events/before_tool_call", body=body, headers=headers)
        conn.getresponse().read()
    conn.close()
    login(browser, served, served.read)
    until(browser, lambda: browser.find_element(By.ID, "count").text == "500 decisions",
          "the first page")
    box = browser.find_element(By.ID, "rows")
    for _ in range(25):  # scrolling to the end pages older decisions in from the server
        count = browser.find_element(By.ID, "count").text
        if count == "10000 decisions":
            break
        browser.execute_script("arguments[0].scrollTop = arguments[0].scrollHeight", box)
        until(browser, lambda c=count: browser.find_element(By.ID, "count").text != c,
              f"the page after {count}")
    assert browser.find_element(By.ID, "count").text == "10000 decisions"
    drawn = len(browser.find_elements(By.CSS_SELECTOR, "#rows .row"))
    assert 0 < drawn < 100  # only what is on screen (and a margin) is in the DOM
