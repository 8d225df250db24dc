"""The web page end to end in headless Chromium (Debian's /usr/bin/chromium driven by Playwright; never a browser
download): type a question, get an answer from wikidata-mini, see the SPARQL and the steps; a screenshot is kept."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import httpx
import pytest
from server_harness import LiveServer

from kbqa.server import ServerSettings, create_app

QUESTION = "where was sasha vujačić born"
# The scripted model (replay backend): what a model wrote for the question, looked up by its text.
OUTPUT = """ATOMIC CONSTRAINTS
AC1: we need the birthplace of Sasha Vujačić
AC2: Sasha Vujačić was born in a place
FRAGMENTS
AC1 => SELECT ?var1
AC2 => [sasha] [born] ?var1 .
GROUNDING
[sasha] entity | Sasha Vujačić | Slovenian basketball player | wd:Q318926
[born] property | place of birth | most specific known birth location of a person | wdt:P19
"""
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync"]
# Screenshots are also copied here (git-ignored) so that they outlive pytest's temporary folders.
ARTIFACTS = Path(__file__).resolve().parent.parent / ".pytest_artifacts"


def find_chromium() -> str | None:
    for name in ("/usr/bin/chromium", "chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    return None


@pytest.fixture(scope="module")
def site(wikidata_mini_store: Path, tmp_path_factory: pytest.TempPathFactory):
    replay = tmp_path_factory.mktemp("page") / "outputs.jsonl"
    replay.write_text(json.dumps({"id": "sq-sasha", "question": QUESTION, "output": OUTPUT}) + "\n", encoding="utf-8")
    settings = ServerSettings(store=wikidata_mini_store, translator="replay", replay_path=replay)
    with LiveServer(create_app(settings)) as live:
        yield live.url


def test_page_answers_a_question_in_headless_chromium(site: str, tmp_path: Path) -> None:
    chromium = find_chromium()
    if chromium is None:
        pytest.skip("chromium not found (Debian: apt-get install -y chromium; `make test` installs it as root)")
    from playwright.sync_api import sync_playwright

    requested: list[str] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch_persistent_context(
            str(tmp_path / "profile"), executable_path=chromium, headless=True, args=CHROMIUM_FLAGS,
            viewport={"width": 1100, "height": 1400})
        try:
            page = browser.new_page()
            page.on("request", lambda r: requested.append(r.url))
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(site + "/")
            page.fill("#question", QUESTION)
            page.click("#ask")
            page.wait_for_selector("#answer-list li", timeout=60_000)

            assert "Maribor" in page.inner_text("#answers")
            sparql = page.inner_text("#sparql")
            assert "wd:Q318926 wdt:P19 ?var1" in sparql and "SELECT" in sparql
            stages = page.eval_on_selector_all("#steps tbody tr", "rows => rows.map(r => r.dataset.stage)")
            assert stages[0] == "translate" and "execute" in stages and "ground" in stages
            assert page.locator("#steps tr.fail").count() == 0
            assert "AC2" in page.inner_text("#constraints") and "[sasha] [born] ?var1" in page.inner_text("#constraints")
            assert "1.000" in page.inner_text("#grounding") and "wd:Q318926" in page.inner_text("#grounding")
            assert "ok" in page.inner_text("#status")
            shot = tmp_path / "server_page.png"
            page.screenshot(path=str(shot), full_page=True)

            # the link runs the same query on /sparql
            href = page.get_attribute("#run-link", "href")
            assert href and href.startswith("/sparql?")
            rows = httpx.get(site + href).json()["results"]["bindings"]
            assert rows == [{"var1": {"type": "uri", "value": "http://www.wikidata.org/entity/Q1010"}}]

            # a question the model never answered: the failing stage is highlighted
            page.fill("#question", "who is the mayor of atlantis")
            page.click("#ask")
            page.wait_for_selector("#steps tr.fail", timeout=60_000)
            assert page.get_attribute("#steps tr.fail", "data-stage") == "translate"
            assert "failed at stage translate" in page.inner_text("#status")
            failed_shot = tmp_path / "server_page_failed.png"
            page.screenshot(path=str(failed_shot), full_page=True)
            assert not errors, errors
        finally:
            browser.close()
    assert all(u.startswith(site) for u in requested), [u for u in requested if not u.startswith(site)]
    assert shot.stat().st_size > 10_000
    ARTIFACTS.mkdir(exist_ok=True)
    shutil.copy(shot, ARTIFACTS / "server_page.png")
    shutil.copy(failed_shot, ARTIFACTS / "server_page_failed.png")
