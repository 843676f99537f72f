"""creator_web as people who annotate all day use it, in a real browser (Playwright + Debian's Chromium): nothing
typed is lost while an answer is slow, a double click or a retried save stores one note, a paste over the limit
is said so, a refused link says why and leads on, layouts hold long words, the keyboard works in the note box,
numbers and text are shown as they are, notes can be edited and deleted with their history kept, and each
annotator's progress and queue are shown.

One server serves every test (``server``); its answers can be held back (``gate``: ``create_app``'s test-only
``hold``), so "a slow answer" is a deterministic state, not a timing. Each test works on its own episode of the
``notes`` dataset, so their notes never mix.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest
from playwright.sync_api import expect

from creator_web import review
from creator_web.server import ServerThread
from creator_web.storage import DataDir
from creator_web.tasks import TaskSources
from loggers import read_episodes, record
from rlds_lang.replay import ReplayEnv, ReplayPolicy, ScriptedEpisode
from tests.test_creator_web_browser import CHROMIUM, browser, page, session_id  # noqa: F401 - fixtures
from tests.visdial_web_fixtures import moving_backend, visdial_folder
from tests.web_helpers import Gate

REPO = Path(__file__).resolve().parents[1]
PUBLISHED = REPO / "builders" / "reddit_comments" / "dummy_data" / "published"
#: a 2,000-character word (no place to break it), text in three CJK scripts, and a float32 reward.
LONG_WORD = "w" * 2000
CJK = "漢字とかなカナ한국어"
REWARD = float(np.float32(-2 / 3))  # -0.6666666865348816, as a log stores it

pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM),
                                reason=f"{CHROMIUM} is missing: install Debian's chromium (apt-get install chromium); "
                                       "Playwright cannot download its own browser here")


@pytest.fixture(scope="module")
def web_dir(tmp_path_factory) -> Path:
    """The server's data folder: ``notes`` (8 short episodes, one per test that writes notes) and ``long`` (one
    episode with a 2,000-character word, two lines, CJK text and a float32 reward)."""
    web = tmp_path_factory.mktemp("annotators") / "web"
    short = [ScriptedEpisode(observations=[f"question {k}", f"answer {k}", "end"], actions=[f"ask {k}", "stop"],
                             rewards=[0.5, 1.0]) for k in range(8)]
    record(ReplayEnv(short), ReplayPolicy(short), episodes=len(short), data_dir=web / "notes", run_name="notes",
           progress=False)
    long = [ScriptedEpisode(observations=[LONG_WORD, f"line one\nline two {CJK}"], actions=[LONG_WORD],
                            rewards=[REWARD])]
    record(ReplayEnv(long), ReplayPolicy(long), episodes=1, data_dir=web / "long", run_name="long", progress=False)
    return web


@pytest.fixture(scope="module")
def gate() -> Gate:
    return Gate()


@pytest.fixture(scope="module")
def server(web_dir, gate):
    folder = visdial_folder(web_dir.parent / "visdial_source", with_image_of=0)
    sources = TaskSources(reddit_dir=str(PUBLISHED), visdial_dir=str(folder), visdial_answerer=moving_backend(folder))
    with ServerThread(str(web_dir), task_sources=sources, hold=gate) as running:
        yield running


@pytest.fixture(autouse=True)
def _gate_opens(gate):
    """A test that fails with the gate closed must not hold the next test's requests."""
    yield
    gate.open()


def open_review(page, server, annotator: str, index: int, dataset: str = "notes") -> None:
    """Opens the Review page as ``annotator`` on episode ``index`` of ``dataset``."""
    page.goto(server.url + f"/review?annotator={annotator}")
    page.select_option("#dataset", dataset)
    page.wait_for_selector("#episodes[aria-busy='false']", state="attached")
    if index:
        page.locator("#episodes li").nth(index).click()
    expect(page.locator("#episode-title")).to_have_text(f"{dataset}-{index:08d}")


def stored(web_dir: Path, index: int, dataset: str = "notes") -> tuple[list[dict], int]:
    """(the notes of the episode's latest version, how many versions it has)."""
    episode_id = f"{dataset}-{index:08d}"
    episode = review.find_episode(DataDir(web_dir), dataset, episode_id)
    folder = web_dir / "versions" / dataset / episode_id
    return json.loads(episode.get("annotations", "[]")), len(list(folder.iterdir())) if folder.exists() else 0


def start_text_task(page, server, url: str) -> None:
    page.goto(server.url + url)
    page.wait_for_selector("#message >> text=Press Enter")
    page.keyboard.press("Enter")
    page.wait_for_selector("#transcript[data-done='false'] .step[data-step='0'] .obs")


# -- nothing typed is lost ---------------------------------------------------------------------------------------
def test_a_question_typed_while_the_answer_is_slow_is_kept(page, server, gate, web_dir):
    start_text_task(page, server, "/play?annotator=fast_typist&task=visdial&mode=agent_stops&seed=3")
    page.keyboard.type("is there a dog?")
    gate.close("act")
    page.keyboard.press("Enter")
    gate.wait_arrived("act")  # the answer is now held back by the server
    page.keyboard.type("what colour is it?")
    page.keyboard.press("Enter")  # too soon: nothing is sent, and the text stays
    expect(page.locator("#message")).to_contain_text("Still waiting for the answer")
    gate.open()
    page.wait_for_selector("#transcript .step[data-step='1'] .obs")
    expect(page.locator("#talk-input")).to_have_value("what colour is it?")
    page.keyboard.press("Enter")
    expect(page.locator("#talk-rounds")).to_have_text("2 of 10 questions")
    page.keyboard.type("is it red?")
    composing_enter(page, "#talk-input")  # an input method's Enter sends nothing
    assert page.input_value("#talk-input") == "is it red?"
    page.keyboard.press("Control+a")
    page.keyboard.type("is it <stop> red?")  # refused by the task: the text comes back into the box
    page.keyboard.press("Enter")
    expect(page.locator("#message.error")).to_contain_text("Not accepted")
    expect(page.locator("#talk-input")).to_have_value("is it <stop> red?")
    page.click("#talk-stop")
    page.wait_for_selector("#transcript[data-done='true']")
    [episode] = list(read_episodes(web_dir / "human" / "visdial" / session_id(page)))
    assert [s["action"] for s in episode["steps"]] == ["is there a dog?", "what colour is it?", "<stop>", ""]


def test_a_wordle_guess_typed_while_the_last_one_is_checked_is_kept(page, server, gate, web_dir):
    page.goto(server.url + "/play?annotator=wordle_typist&answer=crane")
    page.wait_for_selector("text=Press Enter")
    page.keyboard.press("Enter")
    page.wait_for_selector("#board[data-episode^='human-'][data-done='false']")
    page.keyboard.type("slate")
    gate.close("act")
    page.keyboard.press("Enter")
    gate.wait_arrived("act")
    page.keyboard.type("cran")  # the next guess, typed while the first is still being checked
    gate.open()
    page.wait_for_selector("#board .row:nth-child(1) .tile.c0")
    expect(page.locator("#board .row:nth-child(2)")).to_have_attribute("aria-label", "c, r, a, n")
    page.keyboard.type("e")
    page.keyboard.press("Enter")
    page.wait_for_selector("#message >> text=Solved")
    [episode] = list(read_episodes(web_dir / "human" / "wordle" / session_id(page)))
    assert [s["action"] for s in episode["steps"]] == ["slate", "crane", ""]


def test_a_note_typed_while_the_last_one_saves_is_kept(page, server, gate, web_dir):
    open_review(page, server, "note_typist", 1)
    page.fill("#note-text", "first note")
    gate.close("annotate")
    page.click("#save-note")
    gate.wait_arrived("annotate")
    page.locator("#note-text").press_sequentially("second note")
    page.locator("#note-text").press("Enter")  # too soon: nothing is sent, and the text stays
    expect(page.locator("#message")).to_contain_text("Still saving")
    gate.open()
    page.wait_for_selector("#notes >> text=first note")
    expect(page.locator("#note-text")).to_have_value("second note")
    page.locator("#note-text").press("Enter")
    page.wait_for_selector("#notes >> text=second note")
    notes, versions = stored(web_dir, 1)
    assert [n["text"] for n in notes] == ["first note", "second note"] and versions == 2


def test_the_episode_on_screen_opened_again_keeps_the_step_moved_to_while_it_loads(page, server, gate):
    open_review(page, server, "re_opener", 0)
    gate.close("episode")
    page.locator("#episodes li").nth(0).click()  # the episode already shown, asked for again
    gate.wait_arrived("episode")
    page.click("#next")
    expect(page.locator("#step-label")).to_have_text(re.compile(r"^step 1 of "))
    page.evaluate("document.querySelector('#steps tr').dataset.stale = 'yes'")  # gone once the page renders again
    gate.open()
    expect(page.locator("#steps tr[data-stale]")).to_have_count(0)  # the late reply was shown
    expect(page.locator("#step-label")).to_have_text(re.compile(r"^step 1 of "))  # not back to step 0
    page.locator("#episodes li").nth(1).click()  # another episode starts at its first step
    expect(page.locator("#episode-title")).to_have_text("notes-00000001")
    expect(page.locator("#step-label")).to_have_text(re.compile(r"^step 0 of "))


# -- one save, one version ---------------------------------------------------------------------------------------
def test_double_clicking_save_stores_one_version(page, server, web_dir):
    open_review(page, server, "double_clicker", 2)
    posts = []
    page.on("request", lambda r: posts.append(r) if r.method == "POST" and "/annotate" in r.url else None)
    page.fill("#note-text", "saved once")
    page.dblclick("#save-note")
    page.wait_for_selector("#notes >> text=saved once")
    for request in posts:  # every request the page sent has been answered
        request.response()
    notes, versions = stored(web_dir, 2)
    assert [n["text"] for n in notes] == ["saved once"] and versions == 1
    assert len(posts) == 1


def test_a_save_retried_after_a_lost_answer_stores_one_version(page, server, web_dir):
    open_review(page, server, "retrier", 3)

    def answer_lost(route):  # the server stores the note; the page never hears back
        route.fetch()
        route.abort()

    page.route(re.compile(r".*/annotate$"), answer_lost, times=1)
    page.fill("#note-text", "kept once")
    page.click("#save-note")
    page.wait_for_selector("#message.error >> text=cannot reach the server")
    expect(page.locator("#note-text")).to_have_value("kept once")  # back in the box, for the retry
    page.click("#save-note")
    page.wait_for_selector("#notes >> text=kept once")
    notes, versions = stored(web_dir, 3)
    assert [n["text"] for n in notes] == ["kept once"] and versions == 1
    expect(page.locator("#message")).to_contain_text("already saved")


# -- limits and refusals are said where they happen ---------------------------------------------------------------
def test_a_paste_over_the_reply_limit_is_kept_and_said_so(page, server, web_dir):
    start_text_task(page, server, "/play?annotator=paster&task=reddit&seed=2")
    text = "abcd " * 1000  # 5,000 characters, over the 2,000 of a reply
    page.focus("#talk-input")
    page.keyboard.insert_text(text)  # one insertion, as a paste
    expect(page.locator("#talk-input")).to_have_value(text)  # nothing cut
    expect(page.locator("#talk-count")).to_have_text(re.compile(r"5,?000 / 2,?000 .*3,?000 over"))
    expect(page.locator("#talk-count")).to_have_class(re.compile("over"))
    page.keyboard.press("Enter")
    expect(page.locator("#message")).to_contain_text("over the limit")
    assert page.get_attribute("#transcript", "data-done") == "false"  # nothing sent
    page.keyboard.press("Control+a")
    page.keyboard.type("short enough")
    expect(page.locator("#talk-count")).to_have_text(re.compile(r"^12 / 2,?000"))
    page.keyboard.press("Enter")
    page.wait_for_selector("#transcript[data-done='true']")


@pytest.mark.parametrize("query, field", [("annotator=ann%20lee", "annotator"),
                                          ("annotator=ann&answer=zzzzz", "answer"),
                                          ("annotator=ann&task=chess", "task"),
                                          ("annotator=ann&mode=bogus", "mode")])
def test_a_refused_link_shows_its_error_and_new_game_leads_on(page, server, query, field):
    page.goto(server.url + "/play?" + query)
    expect(page.locator("#message.error")).to_contain_text(field)
    expect(page.locator("#message.error")).to_contain_text("refused")
    page.click("#new-game")
    page.wait_for_url(re.compile(r".*/\?next=%2Fplay.*"))
    expect(page.locator("#annotator")).to_have_value("ann lee" if field == "annotator" else "ann")
    if field == "task":
        expect(page.locator("#message.error")).to_contain_text("Task chess is not offered here")


def test_an_error_no_page_script_expected_is_said_on_the_page(page, server):
    page.route(re.compile(r".*/api/datasets$"), lambda route: route.abort())
    page.goto(server.url + "/review?annotator=unlucky")
    expect(page.locator("#message.error")).to_contain_text("cannot reach the server")


def test_open_mode_hides_the_secret_field(page, server):
    page.goto(server.url + "/")
    page.locator("#task option").first.wait_for(state="attached")  # the server's sign-in mode is known
    expect(page.locator("#annotator")).to_be_visible()
    expect(page.locator("#secret")).to_be_hidden()


# -- layouts hold -------------------------------------------------------------------------------------------------
def fits(page) -> None:
    """Nothing on the page is wider than the window."""
    width = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    assert width[0] <= width[1], f"the page is {width[0]} px wide in a {width[1]} px window"


def test_a_2000_character_word_keeps_judge_and_review_within_the_window(page, server):
    page.goto(server.url + "/judge?annotator=wide_judge&view=text")
    page.select_option("#left-ds", "long")
    page.select_option("#right-ds", "notes")
    page.wait_for_selector("#left-board .step[data-step='1']")
    fits(page)
    right = page.locator("#right-board").bounding_box()
    assert right["x"] + right["width"] <= page.viewport_size["width"]
    open_review(page, server, "wide_reviewer", 0, dataset="long")
    fits(page)


# -- the keyboard -------------------------------------------------------------------------------------------------
def composing_enter(page, selector: str) -> None:
    """An Enter pressed to end an input method's composition (CJK typing), as Chrome sends it."""
    page.eval_on_selector(selector, "box => box.dispatchEvent(new KeyboardEvent('keydown', "
                                    "{key: 'Enter', isComposing: true, bubbles: true, cancelable: true}))")


def test_the_note_box_takes_enter_escape_and_arrows_as_the_page_documents(page, server, web_dir):
    open_review(page, server, "keyboarder", 4)
    page.focus("#note-text")
    page.keyboard.press("ArrowRight")  # an empty box: the arrows step through the episode
    expect(page.locator("#step-label")).to_have_text("step 1 of 2")
    page.keyboard.type("look here")
    page.keyboard.press("ArrowLeft")  # a box being written in: the arrows move the caret
    expect(page.locator("#step-label")).to_have_text("step 1 of 2")
    page.keyboard.press("Enter")  # saves
    page.wait_for_selector("#notes >> text=look here")
    expect(page.locator("#note-text")).to_have_value("")
    assert [(n["step"], n["text"]) for n in stored(web_dir, 4)[0]] == [(1, "look here")]
    page.keyboard.type("draft")
    composing_enter(page, "#note-text")  # Enter that ends an input method's composition saves nothing
    expect(page.locator("#note-text")).to_have_value("draft")
    page.keyboard.press("Escape")  # leaves the box (the draft stays in it) ...
    assert page.evaluate("document.activeElement.id") != "note-text"
    page.keyboard.press("ArrowDown")  # ... and the arrows move between episodes again
    expect(page.locator("#episode-title")).to_have_text("notes-00000005")
    expect(page.locator("#note-text")).to_have_value("draft")


def test_arrows_on_a_focused_dataset_list_never_switch_the_dataset(page, server):
    open_review(page, server, "list_keys", 1)
    page.focus("#dataset")
    page.keyboard.press("ArrowDown")
    expect(page.locator("#episode-title")).to_have_text("notes-00000002")
    page.keyboard.press("ArrowUp")  # the option above "notes" is "long": the list must stay on "notes"
    page.keyboard.press("ArrowUp")
    expect(page.locator("#episode-title")).to_have_text("notes-00000000")
    assert page.input_value("#dataset") == "notes"
    page.goto(server.url + "/judge")  # the Judge page's dataset lists hold too
    page.select_option("#left-ds", "long")
    page.focus("#left-ds")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowUp")
    page.keyboard.press("ArrowUp")
    assert page.input_value("#left-ds") == "long"


# -- what is shown ------------------------------------------------------------------------------------------------
def test_rewards_are_rounded_with_the_exact_value_kept_and_newlines_shown(page, server):
    open_review(page, server, "reader", 0, dataset="long")
    cell = page.locator("#steps tr").nth(0).locator("td").nth(3)
    expect(cell).to_have_text("-0.6667")
    expect(cell).to_have_attribute("title", repr(REWARD))
    expect(page.locator("#episodes li").first).to_contain_text("return -0.6667")
    observation = page.locator("#steps tr").nth(1).locator("td").nth(1)
    assert observation.inner_text() == f"line one\nline two {CJK}"  # the line break is shown
    page.goto(page.url.split("/review")[0] + "/judge?annotator=reader&view=text")
    page.select_option("#left-ds", "long")
    page.select_option("#right-ds", "notes")
    head = page.locator("#left-board .step[data-step='0'] .step-head")
    expect(head).to_have_text("step 0 · reward -0.6667")
    expect(head.locator(".reward")).to_have_attribute("title", repr(REWARD))


def test_the_visdial_prompt_says_the_image_is_shown_when_it_is(page, server):
    page.goto(server.url + "/play?annotator=looker&task=visdial")
    page.wait_for_selector("#message >> text=Press Enter")
    seen = set()
    for _ in range(12):  # new dialogues until both kinds were shown: with and without an image file
        before = page.get_attribute("#transcript", "data-episode") or ""
        page.click("#new-game")
        page.wait_for_function("before => document.querySelector('#transcript').dataset.episode !== before",
                               arg=before)
        episode = page.get_attribute("#transcript", "data-episode")
        page.wait_for_selector(f"#picture[data-episode='{episode}']", state="attached")
        prompt = page.text_content("#talk-prompt")
        shown = page.is_visible("#picture-img")
        assert "hidden" not in prompt if shown else "only its caption" in prompt, prompt
        seen.add(shown)
        if seen == {True, False}:
            break
    assert seen == {True, False}


def cjk_font_installed() -> bool:
    try:
        out = subprocess.run(["fc-list", ":lang=zh", "family"], capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.SubprocessError):
        return False
    return bool(out.strip())


def test_cjk_text_has_a_named_font_and_is_drawn_with_one(page, server):
    open_review(page, server, "cjk_reader", 0, dataset="long")
    family = page.evaluate("getComputedStyle(document.body).fontFamily")
    named = ["Noto Sans CJK SC", "WenQuanYi Micro Hei"]
    assert all(name in family for name in named), family
    if not cjk_font_installed():
        pytest.skip("no CJK font installed (tests/system_packages.sh installs fonts-wqy-microhei): the stack is "
                    "named, the drawing cannot be checked")
    cdp = page.context.new_cdp_session(page)
    cdp.send("DOM.enable")
    cdp.send("CSS.enable")
    root = cdp.send("DOM.getDocument")["root"]["nodeId"]
    node = cdp.send("DOM.querySelector", {"nodeId": root, "selector": "#steps tr:nth-child(2) td:nth-child(2)"})
    fonts = cdp.send("CSS.getPlatformFontsForNode", {"nodeId": node["nodeId"]})["fonts"]
    used = {f["familyName"] for f in fonts}
    assert used & {"WenQuanYi Micro Hei", "Noto Sans CJK SC", "Noto Sans CJK JP", "Noto Sans CJK KR"}, used


# -- notes kept honestly ------------------------------------------------------------------------------------------
def test_a_note_is_edited_and_deleted_and_every_version_is_kept(page, server, web_dir):
    open_review(page, server, "editor", 5)
    page.fill("#note-text", "frist draft")
    page.locator("#note-text").press("Enter")
    note = page.locator("#notes .note", has_text="frist draft")
    note.locator("button.edit").click()
    expect(page.locator("#note-text")).to_have_value("frist draft")
    page.fill("#note-text", "first draft")
    page.locator("#note-text").press("Enter")
    edited = page.locator("#notes .note", has_text="first draft")
    expect(edited).to_contain_text("edited")
    [now], versions = stored(web_dir, 5)
    assert (now["text"], now["revision"], versions) == ("first draft", 2, 2)
    page.locator("#episodes").focus()
    page.keyboard.press("x")
    page.fill("#export-name", "edited_note")
    page.click("#export")
    page.wait_for_selector("#message >> text=Exported 1 episode")
    [exported] = list(read_episodes(web_dir / "exports" / "edited_note"))
    assert [n["text"] for n in json.loads(exported["annotations"])] == ["first draft"]  # the current note
    edited.locator("button.delete").click()
    edited.locator("button.delete", has_text="Confirm").click()
    expect(page.locator("#notes .note")).to_have_count(0)
    notes, versions = stored(web_dir, 5)
    assert notes == [] and versions == 3
    history = [json.loads(review.find_version(DataDir(web_dir), "notes", "notes-00000005", v)["annotations"])
               for v in range(3)]
    assert [[n["text"] for n in h] for h in history] == [["frist draft"], ["first draft"], []]
    expect(page.locator("#history")).to_contain_text("deleted")


# -- progress and queue -------------------------------------------------------------------------------------------
def test_the_queue_leads_to_the_episodes_without_my_note_and_progress_counts_my_work(page, server):
    open_review(page, server, "queue_worker", 6)
    page.fill("#note-text", "done with this one")
    page.locator("#note-text").press("Enter")
    page.wait_for_selector("#notes >> text=done with this one")
    expect(page.locator("#queue-count")).to_have_text(re.compile(r"^1 of 8 episodes have your note"))
    page.select_option("#queue-filter", "todo")
    expect(page.locator("#episodes li")).to_have_count(7)
    assert "notes-00000006" not in page.text_content("#episodes")
    page.goto(server.url + "/progress")
    row = page.locator("#progress tr", has_text="queue_worker")
    expect(row.locator("td[data-field='notes']")).to_have_text("1")
