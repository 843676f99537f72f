// The play page of text tasks (Reddit replies, VisDial questions): the episode so far as a transcript, a text box,
// Enter to send (Shift+Enter for a new line), a Stop button where the person may end the dialogue, the picture
// when the task shows one and, once a reply is sent, the value of every reward config.
// Nothing typed is lost: what is sent leaves the box at once (shown as waiting until its answer arrives), so the
// next text can be typed meanwhile; a refused or failed send puts it back. A text over the task's limit is kept
// whole: a counter says by how much it is over, and it is not sent until shortened (nothing is cut).
"use strict";

async function startTalk(session) {
  const base = `/api/sessions/${session.session_id}/play`;
  for (const id of ["wordle", "keyboard"]) document.getElementById(id).hidden = true;
  document.getElementById("talk").hidden = false;
  document.getElementById("play-hint").textContent =
    "Enter sends, Shift+Enter starts a new line; Enter after the episode ends starts the next one. Every episode is recorded.";
  const input = document.getElementById("talk-input"), transcript = document.getElementById("transcript");
  const stop = document.getElementById("talk-stop"), rewards = document.getElementById("rewards");
  const counter = document.getElementById("talk-count"), pending = document.getElementById("talk-pending");
  let state = await api("GET", base), shownAt = performance.now(), busy = false;
  input.removeAttribute("maxlength");  // a paste over the limit stays whole: the counter says so

  // Characters as the server counts them (code points: an emoji is one, not two UTF-16 units).
  function length() { return Array.from(input.value).length; }
  function limit() { return state.max_length || 2000; }
  function over() { return length() - limit(); }
  function count() {
    const n = length(), extra = over();
    counter.textContent = `${n.toLocaleString("en")} / ${limit().toLocaleString("en")} characters` +
      (extra > 0 ? ` — ${extra.toLocaleString("en")} over the limit: shorten it to send (nothing was cut)` : "");
    counter.classList.toggle("over", extra > 0);
  }
  input.addEventListener("input", count);

  // What was sent and awaits its answer, shown under the transcript (the box is free for the next text).
  function showPending(text) {
    pending.hidden = text === null;
    pending.textContent = text === null ? "" : `Sent, waiting for the answer: “${text}”`;
  }

  function rewardTable() {
    rewards.hidden = !state.rewards;
    const body = rewards.querySelector("tbody");
    body.replaceChildren(...(state.rewards || []).map(row => {
      const tr = document.createElement("tr");
      tr.dataset.kind = row.kind;
      const cells = row.note ? [row.kind, "—", row.note, row.recorded ? "yes" : ""]
                             : [row.kind, row.raw, row.reward, row.recorded ? "yes" : ""];
      tr.replaceChildren(...cells.map(value => {
        const td = document.createElement("td");
        if (typeof value === "number") td.appendChild(numberSpan(value)); else td.textContent = value;
        return td;
      }));
      return tr;
    }));
  }

  async function showPicture() {
    const figure = document.getElementById("picture");
    figure.hidden = !state.has_picture;
    if (!state.has_picture) { figure.dataset.episode = state.episode_id || ""; return; }
    const img = document.getElementById("picture-img"), note = document.getElementById("picture-note");
    try {
      const picture = await api("GET", base + "/picture");
      img.hidden = !picture.image;
      if (picture.image) img.src = picture.image; else img.removeAttribute("src");
      note.textContent = picture.note;
    } catch (e) { img.hidden = true; note.textContent = e.message; }
    figure.dataset.episode = state.episode_id || "";  // the picture now shown belongs to this episode
  }

  function render() {
    const live = Boolean(state.episode_id) && !state.done;
    drawSteps(transcript, {kind: "text", rows: state.rows || []});
    transcript.dataset.episode = state.episode_id || "";
    transcript.dataset.done = String(Boolean(state.done));
    document.getElementById("talk-prompt").textContent = state.prompt || "Your text";
    const context = state.context || {};
    document.getElementById("talk-context").textContent =
      Object.entries(context).map(([k, v]) => `${k} ${v}`).join(" · ");
    input.disabled = !live;
    count();
    document.getElementById("talk-send").disabled = !live;
    stop.hidden = !state.can_stop;
    document.getElementById("talk-rounds").textContent =
      state.max_rounds ? `${state.rounds} of ${state.max_rounds} questions` : "";
    rewardTable();
    if (!state.episode_id && state.lost) say(`The server restarted: episode ${state.lost} was lost (it stays unfinished ` +
                                             "in its log). Press Enter or “New game” to start a new one.", true);
    else if (!state.episode_id) say("Press Enter or “New game” to start.");
    else if (state.done) say("Recorded" + (typeof state.return === "number" ? ` (return ${rounded(state.return)})` : "") +
                             ". Enter starts the next one.");
    if (live) input.focus();
  }

  async function newEpisode() {
    busy = true;
    try { state = await api("POST", base + "/new"); shownAt = performance.now(); say(""); }
    catch (e) { say(e.message, true); }
    busy = false;
    render();
    await showPicture();
  }

  async function send(action, typed) {
    if (busy) { say("Still waiting for the answer to what you sent; your text stays in the box.", true); return; }
    busy = true;
    if (typed) { input.value = ""; count(); }  // the box is free for the next text at once
    showPending(action);
    try {
      state = await api("POST", base + "/act", {action, client_ms: Math.round(performance.now() - shownAt)});
      shownAt = performance.now(); say("");
    } catch (e) {
      if (typed) {  // put back what was sent, before anything typed since
        input.value = input.value ? `${action}\n${input.value}` : action;
        count();
      }
      if (e.status === 409) state = await api("GET", base).catch(() => state);
      busy = false;
      showPending(null);
      render();
      say((e.status === 422 ? `Not accepted: ${e.message}` : e.message) + (typed ? " (your text is back in the box)" : ""), true);
      return;
    }
    busy = false;
    showPending(null);
    render();
  }

  document.getElementById("talk-form").addEventListener("submit", event => {
    event.preventDefault();
    if (!input.value.trim()) { say("Type something first.", true); return; }
    if (over() > 0) {
      say(`The text is ${over().toLocaleString("en")} characters over the limit of ${limit().toLocaleString("en")}: ` +
          "shorten it to send it (nothing was cut).", true);
      return;
    }
    send(input.value, true);
  });
  stop.addEventListener("click", () => send(state.stop_action, false));
  input.addEventListener("keydown", event => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      document.getElementById("talk-form").requestSubmit();
    }
  });
  document.addEventListener("keydown", event => {
    if (event.key !== "Enter" || event.target === input || event.target.tagName === "BUTTON") return;
    if (!busy && (!state.episode_id || state.done)) { event.preventDefault(); newEpisode(); }
  });
  document.getElementById("new-game").addEventListener("click", newEpisode);
  render();
  if (state.episode_id) await showPicture();
}
