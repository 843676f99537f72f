// Shared by every page: the session (kept per browser tab), signing out, the JSON API helper, Wordle board and
// transcript drawing, numbers as shown, and errors said on the page (never only in the console).
// A session has a public id and a secret token; the token goes only in the X-Session-Token header.
// A session the server ended (signed out, in this tab or another holding it; expired) is said so by the page's
// message, which from then on leads on to signing in again; what is typed in the page's boxes is kept in the tab
// and comes back in its box once the same annotator signs in again (see keepDrafts).
"use strict";
const KEY = "creator_web.session";
// What the start page says once (why the last session ended), and the text typed in the boxes of a page whose
// session ended ({annotator, page, boxes: {id: text}}).
const NOTICE = "creator_web.notice", DRAFTS = "creator_web.drafts";
// Set when this tab's session ended while the page was open: {session, why}.
let ended = null;
// The only pages the start page sends a person on to (never a URL taken from the address bar as it is).
const PAGES = ["/play", "/judge", "/review"];

function nextPage(value) {
  return PAGES.includes(value) ? value : "/play";
}

async function api(method, path, body) {
  const headers = {"Content-Type": "application/json"};
  const session = currentSession();
  if (session && session.token) headers["X-Session-Token"] = session.token;
  let response;
  try {
    response = await fetch(path, {method, headers, credentials: "same-origin",
                                  body: body === undefined ? undefined : JSON.stringify(body)});
  } catch (e) {  // never retried here: a guess sent twice would be played twice
    throw new Error("cannot reach the server (it may be restarting): try again");
  }
  const data = await response.json().catch(() => ({}));
  if (!response.ok) {
    let detail = data.detail;
    if (Array.isArray(detail)) detail = detail.map(d => `${(d.loc || []).join(".")}: ${d.msg}`).join("; ");
    const lost = (response.status === 404 && String(detail).startsWith("unknown session")) ||
                 (response.status === 401 && String(detail).startsWith("X-Session-Token"));
    let text = detail || response.statusText;
    if (lost && session && path !== "/api/sessions") text = sessionEnded(session, String(detail));
    else if (response.status === 429) text = withWait(String(text), response.headers.get("Retry-After"));
    const error = new Error(text);
    error.status = response.status;
    throw error;
  }
  return data;
}

function currentSession() {
  try { return JSON.parse(sessionStorage.getItem(KEY)); } catch (e) { return null; }
}

// The server ended this tab's session (`detail`: its 401 or 404): the tab forgets it, and the reason comes back in
// words ("This session expired after 4 hours without a request.").
function sessionEnded(session, detail) {
  sessionStorage.removeItem(KEY);
  const why = inWords(detail.replace(/^X-Session-Token: /, "").replace(/: open a (new )?session( first)?$/, ""));
  ended = {session, why: why.charAt(0).toUpperCase() + why.slice(1) + "."};
  showSession(null, "session ended");
  return ended.why;
}

// The session bar and the Sign out button: `session`'s, or `text` and no button when there is none.
function showSession(session, text) {
  const bar = document.getElementById("session-bar"), button = document.getElementById("sign-out");
  if (bar) bar.textContent = session ? `annotator ${session.annotator} · ${session.task} · ${describeConfig(session)}`
                                     : text;
  if (!button) return;
  button.hidden = !session;
  button.onclick = session ? () => signOut(session) : null;
}

// Ends `session` on the server and goes to the start page, which says so and what became of the game in
// progress (it stays unfinished in its log: readers skip it, so no dataset or Review list shows it).
async function signOut(session) {
  let out;
  try { out = await api("POST", `/api/sessions/${session.session_id}/close`); }
  catch (e) { say(e.message, true); return; }  // one that had ended already says so, and leads on
  sessionStorage.removeItem(KEY);
  const game = out.unfinished_game;
  ended = {session, why: `You were signed out (annotator ${session.annotator} · ${session.task}).` + (game ?
    ` Game ${game} stays unfinished in its log: it cannot be resumed, and no dataset or Review list shows it.` : "")};
  location.href = "/";
}

// Leaving a page whose session ended keeps what is typed in its boxes (for the same annotator's next session in
// this tab) and the reason, which the start page says.
function keepDrafts() {
  if (!ended) return;
  const boxes = {}, annotator = ended.session.annotator;
  const typed = "main textarea[id], main input[id]:not([type]), main input[id][type=text]";
  for (const box of document.querySelectorAll(typed)) {
    if (box.value) boxes[box.id] = box.value;
  }
  const kept = Object.keys(boxes).length > 0;
  if (kept) sessionStorage.setItem(DRAFTS, JSON.stringify({annotator, page: location.pathname, boxes}));
  const back = ` Sign in again as ${annotator}: what you had typed comes back in its box.`;
  sessionStorage.setItem(NOTICE, ended.why + (kept ? back : ""));
}
window.addEventListener("pagehide", keepDrafts);

// Puts the text kept by keepDrafts back in its boxes, on its page, for the annotator who typed it (it is dropped
// when another annotator signs in in this tab: their text is not theirs to see).
function restoreDrafts(session) {
  let drafts = null;
  try { drafts = JSON.parse(sessionStorage.getItem(DRAFTS)); } catch (e) { /* unreadable: nothing to restore */ }
  if (!drafts || (drafts.annotator === session.annotator && drafts.page !== location.pathname)) return;
  sessionStorage.removeItem(DRAFTS);
  if (drafts.annotator !== session.annotator) return;
  for (const [id, text] of Object.entries(drafts.boxes || {})) {
    const box = document.getElementById(id);
    if (box) box.value = box.value ? `${text}\n${box.value}` : text;
  }
}

// Seconds as a person reads them: "45 seconds", "15 minutes", "1 hour 30 minutes" (rounded up: nobody is told to
// come back too early); a string gets each "<n> s" in it so written.
function inWords(value) {
  if (typeof value === "string") return value.replace(/\b(\d+(?:\.\d+)?) s\b/g, (_, n) => inWords(Number(n)));
  const count = (n, unit) => `${n} ${unit}${n === 1 ? "" : "s"}`;
  const seconds = Math.ceil(value), minutes = Math.ceil(seconds / 60);
  if (seconds < 60) return count(seconds, "second");
  if (minutes < 60) return count(minutes, "minute");
  return count(Math.floor(minutes / 60), "hour") + (minutes % 60 ? " " + count(minutes % 60, "minute") : "");
}

// A refusal's `text` with the wait its Retry-After header asks for, in words and as a time of day.
function withWait(text, retryAfter) {
  const wait = Number(retryAfter);
  if (!(wait > 0)) return inWords(text);
  const at = new Date(Date.now() + wait * 1000).toLocaleTimeString([], {hour: "2-digit", minute: "2-digit"});
  return `${inWords(text)}. Try again in ${inWords(wait)} (after ${at}).`;
}

// The session config keys a URL may set, per task (anything else in the URL is not config).
const URL_CONFIG = {wordle: ["rule", "mode", "answer", "seed"], reddit: ["split", "reward_kind", "seed"],
                    visdial: ["split", "mode", "reward_kind", "yn_kind", "seed"]};

// A session's config in a few words for the session bar (Wordle: its rule; other tasks: their settings).
function describeConfig(session) {
  if (session.task === "wordle") return `rule ${session.config.rule}`;
  return Object.entries(session.config).filter(([k, v]) => v !== null && k !== "seed").map(([k, v]) => `${k} ${v}`)
    .join(" · ");
}

// The address keys a link may open a session with: the annotator, the task and every task's config keys.
function linkKeys() {
  return ["annotator", "task", ...new Set(Object.values(URL_CONFIG).flat())];
}

// The start page with the values `value(key)` gives for linkKeys() filled in, leading back to this page.
function startLink(value) {
  const kept = new URLSearchParams({next: location.pathname});
  for (const key of linkKeys()) {
    const v = value(key);
    if (v !== undefined && v !== null && v !== "") kept.set(key, v);
  }
  return "/?" + kept.toString();
}

// A link whose session the server refused: says why on the page, and leads on to the start page with the link's
// values filled in ("New game" goes there too), instead of a blank page.
function refusedLink(error, params) {
  const way = startLink(key => params.get(key));
  say(`This link's session was refused: ${error.message}. `, true);
  const link = document.createElement("a");
  link.href = way;
  link.id = "way-on";
  link.textContent = "Open the start page with the link's values to fix it";
  document.getElementById("message").appendChild(link);
  const newGame = document.getElementById("new-game");
  if (newGame) newGame.addEventListener("click", () => { location.href = way; });
  showSession(null, "no session");
  error.shown = true;  // said on the page already
  return error;
}

// Opens a session from the URL (?annotator=&task=&<config keys>, e.g. rule, seed) or reuses this tab's session.
async function ensureSession() {
  const params = new URLSearchParams(location.search);
  let session = currentSession();
  if (params.get("annotator")) {
    const task = params.get("task") || "wordle", config = {};
    for (const key of URL_CONFIG[task] || []) if (params.get(key)) config[key] = params.get(key);
    if (config.seed) config.seed = Number(config.seed);
    try {
      session = await api("POST", "/api/sessions", {annotator: params.get("annotator"), task, config});
    } catch (e) { throw refusedLink(e, params); }
    sessionStorage.setItem(KEY, JSON.stringify(session));
    history.replaceState(null, "", location.pathname);
  }
  showSession(session, "no session");
  if (!session) {
    location.href = "/?next=" + encodeURIComponent(location.pathname);
    const error = new Error("no session");
    error.shown = true;  // the start page is on its way
    throw error;
  }
  restoreDrafts(session);
  return session;
}

// An error no page script caught is said on the page (a page must never go blank with the reason only in the
// console); errors already said there are not repeated.
window.addEventListener("unhandledrejection", event => {
  const reason = event.reason || {};
  event.preventDefault();
  if (!reason.shown && document.getElementById("message")) say(String(reason.message || reason), true);
});

// A number as the page shows it: integers as they are, others to 4 decimals (tiny or huge ones with 4 significant
// digits); `exactTitle` gives the value in full, for a tooltip (the data keeps it exactly).
function rounded(value) {
  if (typeof value !== "number" || !Number.isFinite(value) || Number.isInteger(value)) return String(value);
  const size = Math.abs(value);
  return size >= 1e-3 && size < 1e6 ? String(Number(value.toFixed(4))) : value.toExponential(3);
}

// A <span> showing `value` rounded, its exact value in the title (and in data-exact, for tools and tests).
function numberSpan(value, className) {
  const span = document.createElement("span");
  span.className = className || "number";
  span.textContent = rounded(value);
  span.title = String(value);
  span.dataset.exact = String(value);
  return span;
}

// ↑/↓/←/→ on a closed <select> change its value at once in Chrome: a dataset switched by a key meant for the page.
// On these selects the arrow keys change nothing; the list opens with Alt+↓, F4 or a click.
function keepOnArrows(select) {
  select.addEventListener("keydown", event => {
    if (!event.altKey && ["ArrowUp", "ArrowDown", "ArrowLeft", "ArrowRight"].includes(event.key)) event.preventDefault();
  });
}

// A fresh key for one save (the server stores a save once per key, so a retry or a double click cannot store it
// twice). getRandomValues works on plain-HTTP pages too, unlike randomUUID.
function newClientKey() {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, b => b.toString(16).padStart(2, "0")).join("");
}

function tile(letter, colour) {
  const div = document.createElement("div");
  div.className = "tile" + (letter ? " filled" : "") + (colour === undefined || colour === null ? "" : " c" + colour);
  div.textContent = letter || "";
  return div;
}

// Draws board rows [{guess, colours}] plus an optional row being typed, padded to `total` rows.
function drawBoard(element, rows, typing, total) {
  element.replaceChildren();
  const all = rows.slice();
  if (typing !== null && typing !== undefined) all.push({guess: typing, colours: []});
  const n = Math.max(total || 0, all.length);
  for (let r = 0; r < n; r++) {
    const row = document.createElement("div");
    row.className = "row";
    const item = all[r] || {guess: "", colours: []};
    const label = [];
    for (let i = 0; i < 5; i++) {
      const colour = item.colours && item.colours.length ? item.colours[i] : null;
      row.appendChild(tile(item.guess[i], colour));
      if (item.guess[i]) label.push(item.guess[i] + (colour === null ? "" : ["", " present", " correct"][colour] || ""));
    }
    row.setAttribute("aria-label", label.join(", ") || "empty row");
    element.appendChild(row);
  }
}

// Draws a recorded episode or clip ({kind, rows}) up to step `upto` (all when undefined):
// Wordle board rows, or a transcript of observations and actions for tasks drawn as text.
function drawSteps(element, view, upto) {
  if (view && view.kind === "text") {
    element.replaceChildren();
    element.classList.add("transcript");
    const rows = view.rows.slice(0, upto === undefined ? view.rows.length : upto + 1);
    rows.forEach((row, i) => {  // one block per step: its boundaries stay visible
      const block = document.createElement("div"); block.className = "step"; block.dataset.step = String(i);
      const head = document.createElement("div"); head.className = "step-head";
      head.textContent = `step ${i}`;
      if (typeof row.reward === "number") head.append(" · reward ", numberSpan(row.reward, "reward"));
      const obs = document.createElement("p"); obs.className = "obs"; obs.textContent = row.observation;
      block.append(head, obs);
      if (row.action && (upto === undefined || i < upto)) {
        const act = document.createElement("p"); act.className = "act"; act.textContent = "→ " + row.action;
        block.appendChild(act);
      }
      element.appendChild(block);
    });
    return;
  }
  element.classList.remove("transcript");
  const rows = view ? view.rows : [];
  drawBoard(element, upto === undefined ? rows : rows.slice(0, upto), null, 6);
}

// Says `text` in the page's message; once the session has ended, every message leads on to signing in again.
function say(text, isError) {
  const message = document.getElementById("message");
  message.textContent = text;
  message.className = isError ? "error" : "";
  if (!ended) return;
  const link = document.createElement("a");
  link.id = "sign-in-again";
  link.href = startLink(key => key === "annotator" ? ended.session.annotator : key === "task" ? ended.session.task
                                                                              : ended.session.config[key]);
  link.textContent = "Sign in again";
  message.append(" ", link);
}
