// The play page: a Wordle board, physical and on-screen keyboards; every guess goes to the server.
// Text tasks (Reddit, VisDial) are played in a transcript instead (talk.js).
// Letters and Backspace pressed while the server checks a guess (or starts a game) are kept and applied, in order,
// once its answer is shown, as if pressed then; Enter meanwhile is ignored (a guess is never sent twice).
"use strict";
(async () => {
  const session = await ensureSession();
  if (session.task !== "wordle") { startTalk(session); return; }
  const base = `/api/sessions/${session.session_id}/play`;
  const board = document.getElementById("board");
  let state = await api("GET", base);
  let typing = "", shownAt = performance.now(), busy = false, queued = [];

  const keyboard = document.getElementById("keyboard");
  for (const line of ["qwertyuiop", "asdfghjkl", "+zxcvbnm-"]) {
    const row = document.createElement("div");
    for (const ch of line) {
      const button = document.createElement("button");
      button.type = "button";
      button.tabIndex = -1;  // the physical keyboard drives the page; these are for pointers and touch
      if (ch === "+") { button.textContent = "Enter"; button.className = "wide"; button.dataset.key = "Enter"; }
      else if (ch === "-") { button.textContent = "⌫"; button.className = "wide"; button.dataset.key = "Backspace";
                             button.setAttribute("aria-label", "Backspace"); }
      else { button.textContent = ch; button.dataset.key = ch; }
      button.addEventListener("click", () => press(button.dataset.key));
      row.appendChild(button);
    }
    keyboard.appendChild(row);
  }

  function paintKeys() {
    const best = {};
    for (const row of state.rows || []) row.guess.split("").forEach((ch, i) => {
      best[ch] = Math.max(best[ch] ?? -1, row.colours[i]);
    });
    for (const button of keyboard.querySelectorAll("button")) {
      const c = best[button.dataset.key];
      button.classList.remove("c0", "c1", "c2");
      if (c !== undefined) button.classList.add("c" + c);
    }
  }

  function render() {
    const live = state.episode_id && !state.done;
    drawBoard(board, state.rows || [], live ? typing : null, state.max_guesses || 6);
    board.dataset.episode = state.episode_id || "";  // tests and assistive tools can tell a game is on
    board.dataset.done = String(Boolean(state.done));
    paintKeys();
    if (!state.episode_id && state.lost) say(`The server restarted: game ${state.lost} was lost (it stays unfinished ` +
                                             "in its log). Press Enter or “New game” to start a new one.", true);
    else if (!state.episode_id) say("Press Enter or “New game” to start.");
    else if (state.done) say((state.won ? "Solved! " : "Out of guesses. ") + `The answer was ${String(state.answer).toUpperCase()}. ` +
                             "Enter starts a new game.");
  }

  async function newGame() {
    busy = true;
    try { state = await api("POST", base + "/new"); typing = ""; shownAt = performance.now(); say(""); }
    catch (e) { say(e.message, true); }
    settle();
  }

  // The answer is shown: keys pressed while it was awaited are applied now.
  function settle() {
    busy = false;
    render();
    const keys = queued;
    queued = [];
    for (const key of keys) press(key);
  }

  async function submit() {
    if (typing.length !== 5) { say("Not enough letters: a guess has 5.", true); return; }
    busy = true;
    try {
      state = await api("POST", base + "/act", {action: typing, client_ms: Math.round(performance.now() - shownAt)});
      typing = ""; shownAt = performance.now(); say("");
    } catch (e) {
      if (e.status === 409) {  // the server has no game for this board (e.g. it restarted): show its state
        state = await api("GET", base).catch(() => state);
        typing = "";
        queued = [];
        busy = false;
        render();
        say(e.message, true);
        return;
      }
      say(e.status === 422 ? `“${typing.toUpperCase()}” is not accepted: ${e.message}` : e.message, true);
    }
    settle();
  }

  function press(key) {
    if (busy) { if (key !== "Enter") queued.push(key); return; }
    if (!state.episode_id || state.done) { if (key === "Enter") newGame(); return; }
    if (key === "Enter") submit();
    else if (key === "Backspace") { typing = typing.slice(0, -1); render(); }
    else if (/^[a-z]$/.test(key) && typing.length < 5) { typing += key; render(); }
  }

  document.addEventListener("keydown", event => {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    const key = event.key.length === 1 ? event.key.toLowerCase() : event.key;
    if (key === "Enter" && event.target.tagName === "BUTTON") return;  // the focused button handles it
    if (key === "Enter" || key === "Backspace" || /^[a-z]$/.test(key)) { event.preventDefault(); press(key); }
  });
  document.getElementById("new-game").addEventListener("click", newGame);
  render();
})();
