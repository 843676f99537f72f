"""creator_web's session bounds as a person meets them in a real browser (Playwright + Debian's Chromium): a Sign out
control that says what became of the game in progress, an ended session (signed out elsewhere, or expired) said so
with a way to sign in again that keeps what was typed, a sign-in locked out after wrong secrets saying how long to
wait, and a new game refused by the unfinished-games limit saying why.

One server serves every test (``server``): annotators with secrets, one wrong secret locking an annotator out and
one unfinished game allowed per session, so each bound is reached in a step or two; its session clock (``clock``)
is moved by hand, so "4 hours without a request" passes without waiting. Each test signs in as its own annotator.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest
from playwright.sync_api import expect

from creator_web.limits import Limits
from creator_web.server import ServerThread
from creator_web.tasks import TaskSources
from tests.test_creator_web_browser import CHROMIUM, browser, page  # noqa: F401 - fixtures

REPO = Path(__file__).resolve().parents[1]
PUBLISHED = REPO / "builders" / "reddit_comments" / "dummy_data" / "published"
SECRETS = {name: f"{name}-secret-0123456789"
           for name in ("leaver", "luncher", "locked", "restarter", "first_shift", "second_shift")}
LIMITS = Limits(failed_secrets_per_annotator=1, unfinished_games_per_session=1)

pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM),
                                reason=f"{CHROMIUM} is missing: install Debian's chromium (apt-get install chromium); "
                                       "Playwright cannot download its own browser here")


class Clock:
    """The server's session clock: the wall clock plus ``offset`` seconds, which a test moves forward."""

    def __init__(self) -> None:
        self.offset = 0.0

    def __call__(self) -> float:
        return time.time() + self.offset


@pytest.fixture(scope="module")
def clock() -> Clock:
    return Clock()


@pytest.fixture(scope="module")
def server(tmp_path_factory, clock):
    web = tmp_path_factory.mktemp("sessions") / "web"
    with ServerThread(str(web), annotators=SECRETS, limits=LIMITS,
                      task_sources=TaskSources(reddit_dir=str(PUBLISHED))) as running:
        running.app.state.sessions.clock = clock  # sessions opened from now on use it
        yield running


def sign_in(page, server, annotator: str, task: str = "wordle") -> None:
    """Signs in on the start page as ``annotator`` and lands on the play page."""
    page.goto(server.url + "/?next=%2Fplay")
    expect(page.locator("#secret")).to_be_visible()  # the server's sign-in mode is known
    page.fill("#annotator", annotator)
    page.select_option("#task", task)
    page.fill("#secret", SECRETS[annotator])
    page.press("#secret", "Enter")
    page.wait_for_url("**/play")
    page.wait_for_selector("#message >> text=Press Enter")


def test_signing_out_says_the_game_stays_unfinished_and_a_tab_still_holding_the_session_says_so(page, server):
    sign_in(page, server, "leaver")
    page.keyboard.press("Enter")
    page.wait_for_selector("#board[data-episode^='human-'][data-done='false']")
    game = page.get_attribute("#board", "data-episode")
    other = page.context.new_page()  # a duplicated tab: it holds the same session (and token)
    other.goto(server.url + "/static/style.css")  # this origin's storage, without a page's scripts
    other.evaluate("s => sessionStorage.setItem('creator_web.session', s)",
                   page.evaluate("sessionStorage.getItem('creator_web.session')"))
    other.goto(server.url + "/play")
    other.wait_for_selector(f"#board[data-episode='{game}']")
    page.click("#sign-out")
    page.wait_for_url(server.url + "/")
    expect(page.locator("#message")).to_contain_text("You were signed out")
    expect(page.locator("#message")).to_contain_text(f"{game} stays unfinished")
    expect(page.locator("#sign-out")).to_be_hidden()
    other.keyboard.type("crane")
    other.keyboard.press("Enter")  # a request with the old token
    expect(other.locator("#message.error")).to_contain_text("This session was signed out")
    expect(other.locator("#sign-in-again")).to_be_visible()


def test_an_expired_session_says_so_and_the_typed_reply_comes_back_after_signing_in(page, server, clock):
    sign_in(page, server, "luncher", task="reddit")
    page.keyboard.press("Enter")
    page.wait_for_selector("#transcript[data-done='false'] .step[data-step='0'] .obs")
    page.fill("#talk-input", "a reply typed before lunch")
    clock.offset += LIMITS.session_idle_s + 1  # more than 4 hours without a request
    page.press("#talk-input", "Enter")
    expect(page.locator("#message.error")).to_contain_text("This session expired after 4 hours without a request")
    expect(page.locator("#talk-input")).to_have_value("a reply typed before lunch")
    page.click("#sign-in-again")
    page.wait_for_url(re.compile(r".*/\?next=%2Fplay.*"))
    expect(page.locator("#message")).to_contain_text("what you had typed comes back")
    expect(page.locator("#annotator")).to_have_value("luncher")
    expect(page.locator("#task")).to_have_value("reddit")
    page.fill("#secret", SECRETS["luncher"])
    page.press("#secret", "Enter")
    page.wait_for_url("**/play")
    expect(page.locator("#talk-input")).to_have_value("a reply typed before lunch")


def test_text_kept_from_an_ended_session_is_not_given_to_another_annotator(page, server, clock):
    sign_in(page, server, "first_shift", task="reddit")
    page.keyboard.press("Enter")
    page.wait_for_selector("#transcript[data-done='false'] .step[data-step='0'] .obs")
    page.fill("#talk-input", "first shift's draft")
    clock.offset += LIMITS.session_idle_s + 1
    page.press("#talk-input", "Enter")
    page.click("#sign-in-again")
    expect(page.locator("#annotator")).to_have_value("first_shift")  # the next person changes it
    page.fill("#annotator", "second_shift")
    page.fill("#secret", SECRETS["second_shift"])
    page.press("#secret", "Enter")
    page.wait_for_url("**/play")
    page.wait_for_selector("#message >> text=Press Enter")
    expect(page.locator("#talk-input")).to_have_value("")
    assert page.evaluate("sessionStorage.getItem('creator_web.drafts')") is None  # dropped, not kept for later


def test_a_name_typed_over_the_linked_one_while_the_start_page_loads_is_kept(page, server):
    held = []
    page.route("**/api/tasks", lambda route: held.append(route))  # held back until the name is typed
    page.goto(server.url + "/?next=%2Fplay&annotator=first_shift")
    page.fill("#annotator", "second_shift")
    while not held:
        page.wait_for_timeout(20)
    held[0].continue_()
    expect(page.locator("#task option").first).to_be_attached()  # the list (and the link's values) are in
    expect(page.locator("#annotator")).to_have_value("second_shift")


def test_a_locked_out_sign_in_says_how_long_to_wait(page, server):
    page.goto(server.url + "/")
    expect(page.locator("#secret")).to_be_visible()
    page.fill("#annotator", "locked")
    page.fill("#secret", "not-the-secret-at-all")
    page.press("#secret", "Enter")
    expect(page.locator("#message.error")).to_contain_text("wrong annotator or secret")
    page.fill("#secret", SECRETS["locked"])  # the right one: refused too, while locked out
    page.press("#secret", "Enter")
    expect(page.locator("#message.error")).to_contain_text("Try again in 15 minutes")


def test_a_new_game_refused_by_the_unfinished_games_limit_says_why(page, server):
    sign_in(page, server, "restarter")
    page.keyboard.press("Enter")
    page.wait_for_selector("#board[data-episode$='-00000'][data-done='false']")
    page.click("#new-game")  # the first game is left unfinished: the one this session may leave
    page.wait_for_selector("#board[data-episode$='-00001'][data-done='false']")
    page.click("#new-game")
    expect(page.locator("#message.error")).to_contain_text("has left 1 games unfinished, the limit")
    expect(page.locator("#board")).to_have_attribute("data-episode", re.compile(r".*-00001$"))
