"""The text tasks of creator_web in a real browser (Playwright + Debian's Chromium): a person writes a Reddit reply
and asks a VisDial dialogue by keyboard; each recorded episode is read back and compared with what the page showed.

Screenshots go to the test's temporary folder and to ``$RLDS_LANG_SCREENSHOTS`` when set (as in
``tests/test_creator_web_browser.py``)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from creator_web.server import ServerThread
from creator_web.tasks import TaskSources
from loggers import read_episodes
from tests.test_creator_web_browser import CHROMIUM, browser, page, screenshot, session_id  # noqa: F401 - fixtures
from tests.visdial_web_fixtures import moving_backend, visdial_folder

REPO = Path(__file__).resolve().parents[1]
PUBLISHED = REPO / "builders" / "reddit_comments" / "dummy_data" / "published"

pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM),
                                reason=f"{CHROMIUM} is missing: install Debian's chromium (apt-get install chromium); "
                                       "Playwright cannot download its own browser here")


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("creator_web_tasks")


@pytest.fixture(scope="module")
def server(data_dir):
    folder = visdial_folder(data_dir.parent / "visdial_source", with_image_of=0)
    sources = TaskSources(reddit_dir=str(PUBLISHED), visdial_dir=str(folder), visdial_answerer=moving_backend(folder))
    with ServerThread(str(data_dir / "web"), task_sources=sources) as running:
        yield running


def shown_steps(page) -> list[dict]:
    """The transcript as the page shows it: each step's observation, action (without the arrow), head line and the
    exact reward its head line's tooltip holds (``None`` without one)."""
    steps = []
    blocks = page.locator("#transcript .step")
    for i in range(blocks.count()):
        block = blocks.nth(i)
        acts, reward = block.locator(".act"), block.locator(".step-head .reward")
        steps.append({"observation": block.locator(".obs").text_content(),
                      "action": acts.text_content()[2:] if acts.count() else "",
                      "head": block.locator(".step-head").text_content(),
                      "exact": reward.get_attribute("title") if reward.count() else None})
    return steps


def shown_reward(row: dict, step: int) -> float:
    """The reward a step's head line shows, exactly (its tooltip), after checking the line shows it rounded."""
    prefix = f"step {step} · reward "
    assert row["head"].startswith(prefix), row["head"]
    exact = float(row["exact"])
    assert abs(float(row["head"][len(prefix):]) - exact) <= 5e-5 * max(1.0, abs(exact)), row  # 4 decimals shown
    return exact


def shown_number(cell) -> float:
    """The exact number a table cell shows rounded (its tooltip), or its text when it shows it whole."""
    titled = cell.locator("[title]")
    title = cell.get_attribute("title") or (titled.first.get_attribute("title") if titled.count() else None)
    return float(title if title else cell.text_content())


def test_a_person_writes_a_reddit_reply_and_sees_every_reward(page, server, data_dir, tmp_path):
    page.goto(server.url + "/play?annotator=rob&task=reddit&split=eval&seed=4")
    page.wait_for_selector("#message >> text=Press Enter")
    expect(page.locator("#session-bar")).to_have_text(re.compile("reddit · split eval · reward_kind toxicity"))
    page.keyboard.press("Enter")
    page.wait_for_selector("#transcript[data-done='false'] .step[data-step='0'] .obs")
    page.keyboard.type("Thanks, that helps!")
    page.keyboard.press("Shift+Enter")  # a new line, not a submission
    page.keyboard.type("Second line 🙂")
    page.keyboard.press("Enter")
    page.wait_for_selector("#transcript[data-done='true']")
    page.wait_for_selector("#rewards tr[data-kind='toxicity']")
    screenshot(page, "creator_web_reddit.png", tmp_path)
    [episode] = list(read_episodes(data_dir / "web" / "human" / "reddit" / session_id(page)))
    steps = episode["steps"]
    reply = "Thanks, that helps!\nSecond line 🙂"
    assert [s["action"] for s in steps] == [reply, ""]
    [row] = shown_steps(page)
    assert (row["observation"], row["action"]) == (steps[0]["observation"]["text"], reply)
    assert shown_reward(row, 0) == float(steps[0]["reward"])
    cells = page.locator("#rewards tr[data-kind='toxicity'] td")
    assert cells.nth(0).text_content() == "toxicity" and cells.nth(3).text_content() == "yes"
    assert shown_number(cells.nth(2)) == float(steps[0]["reward"])
    assert "no Reddit score" in page.text_content("#rewards tr[data-kind='upvotes_real']")
    assert (episode["split"], episode["annotator"], episode["seed"]) == ("eval", "rob", 4)
    assert steps[1]["client_ms"] > 0


def test_a_person_asks_a_visdial_dialogue_and_stops_it(page, server, data_dir, tmp_path):
    page.goto(server.url + "/play?annotator=val&task=visdial&mode=agent_stops&seed=1")
    page.wait_for_selector("#message >> text=Press Enter")
    page.keyboard.press("Enter")
    page.wait_for_selector("#transcript[data-done='false'] .step[data-step='0'] .obs")
    expect(page.locator("#picture-note")).not_to_be_empty()  # no image file for this one: the page says so
    assert page.is_hidden("#picture-img")
    for k, question in enumerate(["is there a dog?", "what colour is it?"], 1):
        page.keyboard.type(question)
        page.keyboard.press("Enter")
        expect(page.locator("#talk-rounds")).to_have_text(f"{k} of 10 questions")
    page.click("#talk-stop")
    page.wait_for_selector("#transcript[data-done='true']")
    assert page.is_hidden("#talk-stop")
    screenshot(page, "creator_web_visdial.png", tmp_path)
    [episode] = list(read_episodes(data_dir / "web" / "human" / "visdial" / session_id(page)))
    steps = episode["steps"]
    assert [s["action"] for s in steps] == ["is there a dog?", "what colour is it?", "<stop>", ""]
    shown = shown_steps(page)
    assert [(r["observation"], r["action"]) for r in shown] == \
        [(s["observation"]["text"], s["action"]) for s in steps]
    assert [shown_reward(r, i) for i, r in enumerate(shown)] == [float(s["reward"]) for s in steps]
    assert episode["mode"] == "agent_stops" and episode["annotator"] == "val"


def test_the_visdial_page_shows_the_image_when_the_folder_has_it(page, server):
    def late(route):  # the picture arrives after the new game is drawn, as on a slow machine
        page.wait_for_timeout(300)
        route.continue_()

    page.route(re.compile(r".*/picture$"), late)
    page.goto(server.url + "/play?annotator=ivo&task=visdial")
    page.wait_for_selector("#message >> text=Press Enter")
    episode = ""
    for _ in range(12):  # new dialogues until one is about the image that has a file
        page.click("#new-game")
        page.wait_for_function("before => document.querySelector('#transcript').dataset.episode !== before",
                               arg=episode)  # the new dialogue is drawn (the one before was not done either)
        episode = page.get_attribute("#transcript", "data-episode")
        page.wait_for_selector(f"#picture[data-episode='{episode}']", state="attached")  # its picture has arrived
        if page.is_hidden("#picture-img"):
            expect(page.locator("#picture-note")).not_to_be_empty()
        if page.get_attribute("#picture-img", "src"):
            break
    src = page.get_attribute("#picture-img", "src")
    assert src and src.startswith("data:image/png;base64,") and page.is_visible("#picture-img")
    page.wait_for_function("document.querySelector('#picture-img').complete")  # decoding a data URL takes a moment
    assert page.evaluate("document.querySelector('#picture-img').naturalWidth") == 48


@pytest.mark.parametrize("task, url, actions", [
    ("reddit", "&split=train&seed=8", ["Agreed, well put."]),
    ("visdial", "&mode=10_stop&seed=4", [f"question {k}?" for k in range(10)]),
])
def test_review_shows_each_tasks_episode_as_recorded_and_exports_it_with_a_note(page, server, data_dir, task, url,
                                                                                actions, tmp_path):
    page.goto(server.url + f"/play?annotator=rev_{task}&task={task}{url}")
    page.wait_for_selector("#message >> text=Press Enter")
    page.keyboard.press("Enter")
    page.wait_for_selector("#transcript[data-done='false'] .step[data-step='0']")
    for action in actions:
        page.keyboard.type(action)
        page.keyboard.press("Enter")
        page.wait_for_selector(f"#transcript .step .act >> text=→ {action}")
    page.wait_for_selector("#transcript[data-done='true']")
    sid = session_id(page)
    [played] = list(read_episodes(data_dir / "web" / "human" / task / sid))

    page.goto(server.url + "/review")
    page.select_option("#dataset", f"human/{task}")
    page.wait_for_selector("#episodes[aria-busy='false']", state="attached")  # the list of that dataset is shown
    index = page.locator("#episodes li", has_text=played["episode_id"])
    index.click()
    shows_title = page.locator("#episode-title")
    expect(shows_title).to_have_text(played["episode_id"])
    expect(page.locator("#episode-meta")).to_contain_text(f"annotator rev_{task}")
    page.click("#next")
    page.wait_for_selector("#step-label >> text=step 1 of")
    rows = page.locator("#steps tr")
    assert rows.count() == len(played["steps"])
    for i, step in enumerate(played["steps"]):  # the steps table is the recorded episode
        cells = rows.nth(i).locator("td").all_text_contents()
        assert cells[1:3] == [step["observation"]["text"], step["action"]]
        assert shown_number(rows.nth(i).locator("td").nth(3)) == float(step["reward"])
    page.fill("#note-text", f"{task} looks right")
    page.fill("#note-tags", "checked")
    page.click("#save-note")
    page.wait_for_selector(f"#notes >> text={task} looks right")
    page.locator("#episodes").focus()
    page.keyboard.press("x")
    page.fill("#export-name", f"review_{task}")
    page.click("#export")
    page.wait_for_selector(f"#message >> text=Exported 1 episode to exports/review_{task}")
    screenshot(page, f"creator_web_review_{task}.png", tmp_path)
    [exported] = list(read_episodes(data_dir / "web" / "exports" / f"review_{task}"))
    [note] = json.loads(exported["annotations"])
    assert (note["step"], note["text"], note["tags"], note["annotator"]) == (1, f"{task} looks right", ["checked"],
                                                                             "rev_" + task)
    assert [s["action"] for s in exported["steps"]] == [s["action"] for s in played["steps"]]
    assert exported["session_id"] == sid and exported["task_config"] == played["task_config"]


def test_the_start_page_opens_a_text_task_session_with_its_own_settings(page, server):
    page.goto(server.url + "/?next=%2Fplay")
    page.fill("#annotator", "sam")
    page.select_option("#task", "visdial")
    assert page.is_hidden("#rule") and page.is_visible("#visdial-mode")  # only the chosen task's settings
    page.select_option("#visdial-mode", "10_stop")
    page.select_option("#visdial-yn", "hard")
    page.focus("#annotator")
    page.keyboard.press("Enter")
    page.wait_for_url("**/play")
    expect(page.locator("#session-bar")).to_have_text("annotator sam · visdial · split val · mode 10_stop · "
                                                      "reward_kind rank · yn_kind hard")
    page.wait_for_selector("#message >> text=Press Enter")  # the page listens for Enter once it says so
    page.keyboard.press("Enter")
    page.wait_for_selector("#transcript[data-done='false'] .step[data-step='0'] .obs")
    expect(page.locator("#talk-context")).to_contain_text("mode 10_stop")
    assert page.is_hidden("#talk-stop")  # only agent_stops has a Stop button
