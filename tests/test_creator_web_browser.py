"""creator_web in a real browser: Playwright for Python driving Debian's Chromium (/usr/bin/chromium).

Screenshots of the three pages go to the test's temporary folder, and also to ``$RLDS_LANG_SCREENSHOTS``
when set (``RLDS_LANG_SCREENSHOTS=docs pytest tests/test_creator_web_browser.py`` regenerates the
README's ``docs/creator_web_*.png``).
"""

from __future__ import annotations

import os
import re
import shutil
import threading
from pathlib import Path

import pytest
from playwright.sync_api import expect

from creator_web.server import ServerThread
from loggers import read_episodes, record
from loggers.preferences_dataset import read_judgements
from rlds_lang.preferences.labellers import HumanQueueLabeller
from rlds_lang.preferences.segments import clips_from_episode
from rlds_lang.replay import ReplayEnv, ReplayPolicy, ScriptedEpisode
from rlds_lang.wordle.env import WordleEnv
from rlds_lang.wordle.policies import OptimalPolicy, make_policy

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]

pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM),
                                reason=f"{CHROMIUM} is missing: install Debian's chromium (apt-get install chromium); "
                                       "Playwright cannot download its own browser here")

#: generous: the machine may be busy with other jobs (a slow page is not a failed one; a missing element still is).
BROWSER_TIMEOUT_MS = 45_000


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory) -> Path:
    """Two small recorded datasets to judge and review: optimal games and random-mixture games."""
    root = tmp_path_factory.mktemp("creator_web")
    record(WordleEnv(), OptimalPolicy(), episodes=3, data_dir=root / "expert", run_name="expert", progress=False)
    record(WordleEnv(), make_policy("random_mixture", prob_smart=0.5), episodes=3, data_dir=root / "mixture",
           run_name="mixture", seed=100, progress=False)
    chat = [ScriptedEpisode(observations=["Q: what is in the picture?", "Q: what colour is it?"],
                            actions=["a red bus"], rewards=[1.0])]
    record(ReplayEnv(chat), ReplayPolicy(chat), episodes=1, data_dir=root / "chat", run_name="chat", progress=False)
    return root


@pytest.fixture(scope="module")
def server(data_dir):
    with ServerThread(str(data_dir)) as running:
        yield running


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        yield chromium
        chromium.close()


@pytest.fixture()
def page(browser):
    context = browser.new_context(viewport={"width": 1100, "height": 860})
    context.set_default_timeout(BROWSER_TIMEOUT_MS)
    yield context.new_page()
    context.close()


def screenshot(page, name: str, tmp_path: Path) -> Path:
    """Saves the page to ``tmp_path/name`` (and to ``$RLDS_LANG_SCREENSHOTS/name`` when set)."""
    out = tmp_path / name
    page.screenshot(path=str(out), full_page=True)
    assert out.stat().st_size > 5_000  # a rendered page, not a blank image
    target = os.environ.get("RLDS_LANG_SCREENSHOTS")
    if target:
        os.makedirs(target, exist_ok=True)
        shutil.copy(out, os.path.join(target, name))
    return out


def session_id(page) -> str:
    return page.evaluate("JSON.parse(sessionStorage.getItem('creator_web.session')).session_id")


def shows(page, selector: str, text: str | re.Pattern) -> None:
    """Waits until ``selector``'s text is ``text`` (Playwright's own check: the page's CSP forbids the string
    evaluation ``wait_for_function`` would need)."""
    expect(page.locator(selector)).to_have_text(text, timeout=BROWSER_TIMEOUT_MS)


def type_guess(page, word: str) -> None:
    for letter in word:
        page.keyboard.press(letter)
    page.keyboard.press("Enter")


def test_a_person_wins_a_game_and_the_log_holds_exactly_its_steps(page, server, data_dir, tmp_path):
    page.goto(server.url + "/play?annotator=alice&answer=crane&seed=5")
    page.wait_for_selector("text=Press Enter")
    page.keyboard.press("Enter")  # new game
    page.wait_for_selector("#board[data-episode^='human-'][data-done='false']")
    type_guess(page, "zzzzz")  # not in the guess list: shown, not logged
    page.wait_for_selector("#message.error >> text=not in the guess list")
    for _ in range(5):
        page.keyboard.press("Backspace")
    type_guess(page, "abid")  # too short
    page.wait_for_selector("#message.error >> text=Not enough letters")
    page.keyboard.press("Backspace")
    for _ in range(3):
        page.keyboard.press("Backspace")
    type_guess(page, "abide")
    page.wait_for_selector("#board .row:nth-child(1) .tile.c2")
    for letter in "crane":  # the on-screen keyboard works too
        page.click(f"#keyboard button[data-key='{letter}']")
    page.click("#keyboard button[data-key='Enter']")
    page.wait_for_selector("#message >> text=Solved")
    assert page.locator("#board .row:nth-child(2) .tile.c2").count() == 5
    screenshot(page, "creator_web_play.png", tmp_path)

    sid = session_id(page)
    [episode] = list(read_episodes(data_dir / "human" / "wordle" / sid))
    steps = episode["steps"]
    assert [s["action"] for s in steps] == ["abide", "crane", ""]
    assert [s["observation"]["text"] for s in steps] == ["", "🟨⬛⬛⬛🟩", "🟩🟩🟩🟩🟩"]
    assert [s["observation"]["feedback"].tolist() for s in steps] == [[-1] * 5, [1, 0, 0, 0, 2], [2] * 5]
    assert [s["reward"] for s in steps] == [-1.0, 0.0, 0.0] and [s["discount"] for s in steps] == [1.0, 0.0, 0.0]
    assert [s["is_terminal"] for s in steps] == [False, False, True]
    assert steps[0]["client_ms"] == 0 and steps[1]["client_ms"] > 0 and steps[2]["client_ms"] > 0
    assert (episode["policy"], episode["annotator"], episode["session_id"], episode["answer"], episode["seed"]) == \
        ("human:alice", "alice", sid, "crane", 5)


def test_a_keyboard_judgement_lands_in_the_log(page, server, data_dir, tmp_path):
    page.goto(server.url + "/judge?annotator=bob")
    page.wait_for_selector("#message >> text=Choose the two datasets to judge")  # no default pair: nothing drawn
    assert page.input_value("#left-ds") == "" and page.input_value("#right-ds") == ""
    page.select_option("#left-ds", "expert")
    page.select_option("#right-ds", "mixture")
    shows(page, "#left-id", re.compile(r"^expert-"))
    shows(page, "#right-id", re.compile(r"^mixture-"))
    page.wait_for_selector("#left-board .tile.c2")
    screenshot(page, "creator_web_judge.png", tmp_path)
    left, right = page.text_content("#left-id"), page.text_content("#right-id")
    page.keyboard.press("r")
    page.wait_for_selector("#message >> text=Recorded “right”")
    page.keyboard.press(" ")
    page.wait_for_selector("#count >> text=2 judged")
    sid = session_id(page)
    judgements = list(read_judgements(data_dir / "judgements" / sid, "all"))  # the preferences format
    assert [j.label.value for j in judgements] == ["right", "skip"]
    first = judgements[0]
    assert (first.left.source_episode_id, first.right.source_episode_id) == (left, right)
    assert first.labeller == "human:bob" and first.seconds > 0
    sessions = sorted((e for e in read_episodes(data_dir / "judgements" / sid) if e["task"] == "preference_session"),
                      key=lambda e: int(e["judgement_index"]))
    assert [e["steps"][0]["action"] for e in sessions] == ["right", "skip"]
    assert (sessions[0]["left_dataset"], sessions[0]["right_dataset"]) == ("expert", "mixture")


def test_two_browser_contexts_record_two_separate_sessions(browser, server, data_dir):
    pages = []
    for name, answer in [("ann", "slate"), ("ben", "moist")]:
        context = browser.new_context()
        context.set_default_timeout(BROWSER_TIMEOUT_MS)
        page = context.new_page()
        page.goto(server.url + f"/play?annotator={name}&answer={answer}")
        page.wait_for_selector("text=Press Enter")
        page.keyboard.press("Enter")
        page.wait_for_selector("#board[data-episode^='human-'][data-done='false']")
        pages.append(page)
    script = {0: ["crane", "slate"], 1: ["crane", "moist"]}
    for turn in range(2):  # interleaved turns
        for k, page in enumerate(pages):
            type_guess(page, script[k][turn])
            page.wait_for_selector(f"#board .row:nth-child({turn + 1}) .tile.c0, "
                                   f"#board .row:nth-child({turn + 1}) .tile.c1, "
                                   f"#board .row:nth-child({turn + 1}) .tile.c2")
    for page in pages:
        page.wait_for_selector("#message >> text=Solved")
    sids = [session_id(p) for p in pages]
    assert sids[0] != sids[1]
    for k, (sid, name) in enumerate(zip(sids, ["ann", "ben"])):
        episodes = list(read_episodes(data_dir / "human" / "wordle" / sid))
        assert [[s["action"] for s in e["steps"]] for e in episodes] == [script[k] + [""]]
        assert episodes[0]["policy"] == f"human:{name}" and episodes[0]["session_id"] == sid
    for page in pages:
        page.context.close()


def test_review_replays_annotates_and_exports(page, server, data_dir, tmp_path):
    page.goto(server.url + "/review?annotator=carol")
    page.select_option("#dataset", "expert")
    page.wait_for_selector("#episode-title >> text=expert-00000000")
    page.keyboard.press("ArrowDown")
    page.wait_for_selector("#episode-title >> text=expert-00000001")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    page.wait_for_selector("#step-label >> text=step 2 of")
    assert page.locator("#board .row .tile.c0, #board .row .tile.c1, #board .row .tile.c2").count() == 10
    page.fill("#note-text", "second guess narrows it down")
    page.fill("#note-tags", "good, clever")
    page.click("#save-note")
    page.wait_for_selector("#notes >> text=second guess narrows it down")
    page.keyboard.press("x")
    page.fill("#export-name", "review_pick")
    page.click("#export")
    page.wait_for_selector("#message >> text=Exported 1 episode to exports/review_pick")
    screenshot(page, "creator_web_review.png", tmp_path)
    [exported] = list(read_episodes(data_dir / "exports" / "review_pick"))
    assert exported["episode_id"] == "expert-00000001"
    assert '"step": 2' in exported["annotations"] and '"clever"' in exported["annotations"]


def test_review_keeps_the_newest_list_when_an_older_reply_arrives_late(page, server):
    """The page's first list (dataset ``chat``, 1 episode) answers after the chosen one (``expert``): the late
    reply must not replace the expert list, or the arrow keys would browse the wrong episodes."""
    page.add_init_script("""
      const realFetch = window.fetch;
      window.fetch = async (url, options) => {
        if (!String(url).includes("/api/datasets/chat/episodes")) return realFetch(url, options);
        await new Promise(r => setTimeout(r, 1500));
        const response = await realFetch(url, options);
        const json = response.json.bind(response);
        // Marks the page once the late reply has been read and every promise waiting on it has run.
        response.json = async () => {
          const data = await json();
          setTimeout(() => document.body.setAttribute("data-late-reply", "handled"), 0);
          return data;
        };
        return response;
      };""")
    page.goto(server.url + "/review?annotator=erin")
    page.locator("#dataset option").nth(2).wait_for(state="attached")  # the list holds at least 3 datasets
    assert page.input_value("#dataset") == "chat"  # the first list asked for is the slow one
    page.select_option("#dataset", "expert")
    page.wait_for_selector("#episode-title >> text=expert-00000000")
    page.wait_for_selector("body[data-late-reply='handled']", state="attached")  # the chat reply was handled
    assert page.locator("#episodes li").count() == 3
    assert page.text_content("#episode-title") == "expert-00000000"
    page.evaluate("document.activeElement.blur()")  # the arrow keys go to the page, not the <select>
    page.keyboard.press("ArrowDown")
    page.wait_for_selector("#episode-title >> text=expert-00000001")


def test_the_start_page_opens_a_session_by_keyboard_and_rejects_a_bad_id(page, server):
    page.goto(server.url + "/judge")  # no session yet: sent to the start page, then back
    page.wait_for_url("**/?next=%2Fjudge")
    page.fill("#annotator", "dana")
    page.select_option("#rule", "ilql")
    page.keyboard.press("Enter")
    page.wait_for_url("**/judge")
    page.wait_for_selector("#session-bar >> text=annotator dana · wordle · rule ilql")
    page.goto(server.url + "/")
    page.evaluate("document.querySelector('#annotator').removeAttribute('pattern')")  # let the server judge
    page.fill("#annotator", "../dana")
    page.keyboard.press("Enter")
    page.wait_for_selector("#message.error >> text=annotator")


def test_a_task_without_a_board_is_judged_as_a_transcript(page, server):
    page.goto(server.url + "/judge?annotator=eve")
    page.select_option("#left-ds", "chat")
    page.select_option("#right-ds", "expert")
    page.wait_for_selector("#left-board.transcript .act >> text=→ a red bus")
    assert page.locator("#right-board .tile.c2").count() >= 5  # the Wordle clip beside it is still a board


def test_a_pipeline_pair_is_judged_by_keyboard_and_the_answer_reaches_the_pipeline(browser, data_dir, tmp_path):
    """A server attached to a preference pipeline's HumanQueueLabeller: the page shows the pipeline's pair (no
    dataset pickers), L answers it, and the pipeline's ``judge`` call returns that label with the annotator."""
    clips = [clips_from_episode(next(iter(read_episodes(data_dir / name))))[0] for name in ("expert", "mixture")]
    human = HumanQueueLabeller(timeout=60.0)
    asked: dict = {}
    pipeline = threading.Thread(target=lambda: asked.update(judgement=human.judge(clips[0], clips[1])), daemon=True)
    pipeline.start()
    context = browser.new_context(viewport={"width": 1100, "height": 860})
    context.set_default_timeout(BROWSER_TIMEOUT_MS)
    page = context.new_page()
    with ServerThread(str(tmp_path / "web"), human=human) as running:
        page.goto(running.url + "/judge?annotator=carol")
        shows(page, "#left-id", clips[0].source_episode_id)
        assert not page.is_visible("#left-ds")
        page.wait_for_selector("#right-board .tile")
        page.keyboard.press("l")
        pipeline.join(30)
        context.close()
    judgement = asked["judgement"]
    assert judgement.label.value == "left" and judgement.labeller == "human:carol" and judgement.seconds > 0
    assert (judgement.left.clip_id, judgement.right.clip_id) == (clips[0].clip_id, clips[1].clip_id)
    assert not (tmp_path / "web" / "judgements").exists()


def test_clips_judged_as_text_show_each_step_and_the_judgement_is_recorded(page, server, data_dir):
    page.goto(server.url + "/judge?annotator=tom&view=text")
    expect(page.locator("#as-text")).to_be_checked()
    page.select_option("#left-ds", "chat")
    page.select_option("#right-ds", "expert")
    page.wait_for_selector("#right-board.transcript .step[data-step='1']")
    assert page.locator("#right-board .tile").count() == 0  # the Wordle game is a transcript too
    game = {e["episode_id"]: e for e in read_episodes(data_dir / "expert")}[page.text_content("#right-id")]
    blocks = page.locator("#right-board .step")
    assert blocks.count() == len(game["steps"])
    for i, step in enumerate(game["steps"]):  # what the page shows is exactly the recorded steps
        block = blocks.nth(i)
        assert block.locator(".obs").text_content() == step["observation"]["text"]
        assert block.locator(".step-head").text_content() == f"step {i} · reward {float(step['reward']):g}"
        acts = block.locator(".act")
        assert (acts.text_content() if acts.count() else "") == (f"→ {step['action']}" if step["action"] else "")
    left = page.text_content("#left-id")
    page.keyboard.press("e")
    page.wait_for_selector("#message >> text=Recorded “equal”")
    [judgement] = list(read_judgements(data_dir / "judgements" / session_id(page), "all"))
    assert (judgement.label.value, judgement.left.source_episode_id, judgement.right.source_episode_id) == \
        ("equal", left, game["episode_id"])


@pytest.mark.parametrize("target", ["javascript:document.title='pwned'", "//evil.example/", "https://evil.example/"])
def test_the_start_page_goes_on_only_to_the_tools_own_pages(page, server, target):
    from urllib.parse import quote

    page.goto(server.url + "/?next=" + quote(target, safe=""))
    page.fill("#annotator", "nia")
    page.keyboard.press("Enter")
    page.wait_for_url(server.url + "/play")
    assert page.title() != "pwned" and page.url == server.url + "/play"


def test_a_game_lost_to_a_restart_is_said_so_and_the_board_is_cleared(browser, tmp_path):
    context = browser.new_context()
    context.set_default_timeout(BROWSER_TIMEOUT_MS)
    page = context.new_page()
    first = ServerThread(str(tmp_path / "web")).start()
    port = first.port
    try:
        page.goto(first.url + "/play?annotator=lia&answer=crane")
        page.wait_for_selector("text=Press Enter")
        page.keyboard.press("Enter")
        page.wait_for_selector("#board[data-episode$='-00000'][data-done='false']")
        type_guess(page, "slate")
        page.wait_for_selector("#board .row:nth-child(1) .tile.c0, #board .row:nth-child(1) .tile.c2")
    finally:
        first.stop()
    with ServerThread(str(tmp_path / "web"), port=port):  # the same data folder, restarted
        type_guess(page, "crane")
        page.wait_for_selector("#message.error")
        if "cannot reach the server" in page.text_content("#message"):  # the old server's kept-alive connection
            page.keyboard.press("Enter")  # the person tries again, as the page asks
        page.wait_for_selector("#message.error >> text=was lost when the server restarted")
        assert page.get_attribute("#board", "data-episode") == ""  # the dead board is gone
        page.keyboard.press("Enter")  # a new game starts
        page.wait_for_selector("#board[data-episode$='-00001'][data-done='false']")
        context.close()
