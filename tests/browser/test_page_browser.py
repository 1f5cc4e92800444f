"""The web page in headless Chromium: ask a question on a small Obsidian vault and see the answer
with numbered sources that open the note, open "Why this answer", see the abstain message for a
question the notes cannot answer, see the error for a bad key, and search passages."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from rag.config import Settings
from rag.ingest.pipeline import index_vaults
from rag.store import keys as key_store
from rag.store.vaults import NewVault, add_vault
from tests.notes.test_cli import FILES, QUESTION, ZEBRA
from tests.support.files import write_files

pytestmark = pytest.mark.browser
WAIT_S = 20


@pytest.fixture
def key(conn: psycopg.Connection, settings: Settings, tmp_path: Path) -> str:
    root = write_files(tmp_path / "Team Notes", FILES)
    (root / ".obsidian").mkdir()
    add_vault(conn, NewVault(name="notes", path=root))
    conn.commit()
    assert not index_vaults(settings).failed
    return key_store.create_key(conn, "page", vaults=["notes"], clearance="internal")[1]


def wait(browser, condition, message: str):
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(browser, WAIT_S).until(condition, message)


def visible(browser, css: str):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec

    return wait(browser, ec.visibility_of_element_located((By.CSS_SELECTOR, css)), f"{css} never became visible")


def enter_key(browser, base: str, key: str) -> None:
    from selenium.webdriver.common.by import By

    browser.get(base + "/")
    field = browser.find_element(By.ID, "api-key")
    field.clear()
    field.send_keys(key)
    browser.find_element(By.CSS_SELECTOR, "#key-form button[type=submit]").click()
    # the vault picker fills from GET /v1/vaults once the key is accepted
    wait(browser, lambda b: len(b.find_elements(By.CSS_SELECTOR, "#ask-vault option")) > 1, "vaults never loaded")
    # then each vault's folders (GET /v1/vaults/{vault}/folders), after the vaults: on a busy machine
    # reading the folder picker right after the vaults arrive raced them
    wait(browser, lambda b: len(b.find_elements(By.CSS_SELECTOR, "#ask-folder option")) > 1, "folders never loaded")


def ask(browser, question: str) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    box = browser.find_element(By.ID, "question")
    box.clear()
    box.send_keys(question, Keys.ENTER)  # Enter submits: the page works from the keyboard
    wait(browser, lambda b: b.find_element(By.ID, "ask-status").text in ("Answer ready.", "No answer found.")
         or b.find_element(By.ID, "error").is_displayed(), "no answer")


def test_ask_shows_the_answer_sources_and_why(browser, live_server: str, key: str, screenshot) -> None:
    from selenium.webdriver.common.by import By

    enter_key(browser, live_server, key)
    # the key stays in this tab's session storage and never reaches the URL
    assert browser.execute_script("return sessionStorage.getItem('ragpg.apiKey')") == key
    assert key not in browser.current_url
    folders = [o.text for o in browser.find_elements(By.CSS_SELECTOR, "#ask-folder option")]
    assert "notes/projects" in folders and "notes/meetings" in folders
    ask(browser, QUESTION)
    answer = visible(browser, "#answer")
    assert "ship date is in March" in answer.find_element(By.ID, "answer-text").text
    assert "abstained" not in answer.get_attribute("class")
    cites = answer.find_elements(By.CSS_SELECTOR, "#answer-text a.cite")
    assert cites and cites[0].text == "[1]" and cites[0].get_attribute("href").endswith("#source-1")
    sources = answer.find_elements(By.CSS_SELECTOR, "#sources > li")
    assert sources and sources[0].get_attribute("id") == "source-1"
    link = sources[0].find_element(By.TAG_NAME, "a")
    assert link.text == "projects/alpha.md"
    # Obsidian opens the note at the passage's heading (its URI's `file=Note%23Heading`), and the page shows
    # the heading as the reader sees it (issue 48)
    assert link.get_attribute("href") == "obsidian://open?vault=Team%20Notes&file=projects%2Falpha.md%23Timeline"
    where = sources[0].find_element(By.CSS_SELECTOR, ".where").text
    assert where.startswith("— Alpha › Timeline, line") and "#" not in where, where
    screenshot("answer")

    # the passage behind a source, fetched through /v1/chunks
    sources[0].find_element(By.CSS_SELECTOR, "button.linklike").click()
    passage = wait(browser, lambda b: (p := sources[0].find_element(By.CSS_SELECTOR, ".passage")).is_displayed()
                   and p.text and p, "passage never shown")
    assert "ship date is in March" in passage.text

    # "Why this answer": keyboard-operable disclosure with what `ragpg ask --explain` says
    summary = answer.find_element(By.CSS_SELECTOR, "#why summary")
    summary.click()
    why = visible(browser, "#why-lines")
    text = why.text
    assert "Searched vault notes: every folder" in text
    assert "projects/alpha.md — Alpha › Timeline (found by both word and meaning search)" in text
    assert "Decision: answered" in text
    browser.execute_script("document.getElementById('why').scrollIntoView()")
    screenshot("explanation")


def test_unanswerable_question_shows_the_abstain_message(browser, live_server: str, key: str,
                                                         screenshot) -> None:
    from selenium.webdriver.common.by import By

    enter_key(browser, live_server, key)
    ask(browser, ZEBRA)
    answer = visible(browser, "#answer")
    assert "abstained" in answer.get_attribute("class")
    assert answer.find_element(By.ID, "answer-text").text == "I could not find this information in the available documents."
    assert browser.find_element(By.ID, "ask-status").text == "No answer found."
    assert not browser.find_elements(By.CSS_SELECTOR, "#sources > li")
    answer.find_element(By.CSS_SELECTOR, "#why summary").click()
    assert "Decision: not answered" in visible(browser, "#why-lines").text
    screenshot("abstain")


def test_bad_key_shows_an_error(browser, live_server: str, key: str, screenshot) -> None:
    from selenium.webdriver.common.by import By

    browser.get(live_server + "/")
    error = visible(browser, "#error")  # a first visit: the server needs a key, and the page says so
    assert error.text == "This server needs an API key: enter it above."
    browser.find_element(By.ID, "api-key").send_keys("rpg_not_a_real_key")
    browser.find_element(By.CSS_SELECTOR, "#key-form button[type=submit]").click()
    wait(browser, lambda b: b.find_element(By.ID, "error").text.startswith("The API key was not accepted"),
         "no error for the bad key")
    assert error.get_attribute("role") == "alert"
    ask(browser, QUESTION)
    assert browser.find_element(By.ID, "error").text.startswith("The API key was not accepted")
    assert not browser.find_element(By.ID, "answer").is_displayed()
    screenshot("bad-key")


def test_search_tab_lists_passages(browser, live_server: str, key: str, screenshot) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    enter_key(browser, live_server, key)
    tab = browser.find_element(By.ID, "tab-ask")
    tab.send_keys(Keys.ARROW_RIGHT)  # arrow keys move between the tabs
    assert browser.find_element(By.ID, "tab-search").get_attribute("aria-selected") == "true"
    assert browser.find_element(By.ID, "panel-search").is_displayed()
    query = browser.find_element(By.ID, "search-query")
    query.send_keys("alpha ship date", Keys.ENTER)
    wait(browser, lambda b: "found" in b.find_element(By.ID, "search-status").text, "no search results")
    items = browser.find_elements(By.CSS_SELECTOR, "#results > li")
    assert items and "ship date" in items[0].text.lower()
    assert all(i.find_element(By.TAG_NAME, "a").get_attribute("href").startswith("obsidian://open?vault=Team%20Notes")
               for i in items)
    screenshot("search")


@pytest.mark.parametrize(("path", "css"), [("/docs", ".swagger-ui .info .title"), ("/redoc", "h1")])
def test_api_docs_render_from_bundled_assets(browser, live_server: str, path: str, css: str) -> None:
    """Swagger UI and ReDoc draw the API from /openapi.json with only this server's assets."""
    browser.get(live_server + path)
    assert "ragpg" in visible(browser, css).text
    external = browser.execute_script(
        "return performance.getEntriesByType('resource').map(e => e.name)"
        ".filter(u => !u.startsWith(location.origin) && !u.startsWith('data:'))")
    assert external == []
