// Shared by every page: the session (kept per browser tab), the JSON API helper, Wordle board and transcript
// drawing, numbers as shown, and errors said on the page (never only in the console).
// A session has a public id and a secret token; the token goes only in the X-Session-Token header.
"use strict";
const KEY = "creator_web.session";
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
    if (lost && session && path !== "/api/sessions") {
      sessionStorage.removeItem(KEY);  // the server no longer knows this tab's session: start a new one
      location.href = "/?next=" + encodeURIComponent(location.pathname);
    }
    const error = new Error(detail || response.statusText);
    error.status = response.status;
    throw error;
  }
  return data;
}

function currentSession() {
  try { return JSON.parse(sessionStorage.getItem(KEY)); } catch (e) { return null; }
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

// A link whose session the server refused: says why on the page, and leads on to the start page with the link's
// values filled in ("New game" goes there too), instead of a blank page.
function refusedLink(error, params) {
  const kept = new URLSearchParams({next: location.pathname});
  for (const key of linkKeys()) if (params.get(key)) kept.set(key, params.get(key));
  const way = "/?" + kept.toString();
  say(`This link's session was refused: ${error.message}. `, true);
  const link = document.createElement("a");
  link.href = way;
  link.id = "way-on";
  link.textContent = "Open the start page with the link's values to fix it";
  document.getElementById("message").appendChild(link);
  const newGame = document.getElementById("new-game");
  if (newGame) newGame.addEventListener("click", () => { location.href = way; });
  const bar = document.getElementById("session-bar");
  if (bar) bar.textContent = "no session";
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
  const bar = document.getElementById("session-bar");
  if (bar) bar.textContent = session ? `annotator ${session.annotator} · ${session.task} · ${describeConfig(session)}`
                                     : "no session";
  if (!session) {
    location.href = "/?next=" + encodeURIComponent(location.pathname);
    const error = new Error("no session");
    error.shown = true;  // the start page is on its way
    throw error;
  }
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

function say(text, isError) {
  const message = document.getElementById("message");
  message.textContent = text;
  message.className = isError ? "error" : "";
}
