// The review page: browse a dataset's episodes (all of them, or your queue: those without a note of yours),
// replay one step by step, write, edit and delete notes, export a selection.
// Saving: what is saved leaves the note boxes at once (shown as "saving" until its answer arrives), so the next
// note can be typed meanwhile, and a failed save puts it back. Each save carries a client key, kept while the same
// save is retried, so a double click or a retry after a lost answer is stored once.
"use strict";
(async () => {
  const session = await ensureSession();
  const $ = id => document.getElementById(id);
  const datasetSelect = $("dataset"), list = $("episodes"), filter = $("queue-filter");
  const noteText = $("note-text"), noteTags = $("note-tags"), saveButton = $("save-note");
  const ARROWS = ["ArrowUp", "ArrowDown", "ArrowLeft", "ArrowRight"], MAX_NOTE = 2000;
  const CHANGED = {add: "added", edit: "edited", delete: "deleted"};
  let episodes = [], current = -1, detail = null, step = 0, dataset = "";
  // Replies may arrive out of order (the initial list and a quick change of dataset): only the newest
  // request of each kind is applied, so the list, its dataset and the open episode always agree.
  let listRequest = 0, episodeRequest = 0;
  const selected = new Set();
  // The note being edited ({episode_id, note_id, revision}; null: a new note), the text being saved (null: none),
  // and the last change that failed, with its key (sent again with that key when retried unchanged).
  let editing = null, saving = null, failed = null;

  const listed = await api("GET", "/api/datasets");
  for (const name of Object.keys(listed.datasets)) datasetSelect.add(new Option(name, name));
  for (const [name, why] of Object.entries(listed.damaged)) {  // shown, not hidden: a damaged dataset is not a smaller one
    const option = new Option(`${name} (damaged: ${why})`, "");
    option.disabled = true;
    datasetSelect.add(option);
  }

  function mine(e) { return (e.annotators || []).includes(session.annotator); }
  // The episodes the list shows, by their index in `episodes`: all, your queue (no note of yours) or your done ones.
  function shown() {
    return episodes.map((e, i) => i).filter(i => filter.value === "all" || (filter.value === "todo") !== mine(episodes[i]));
  }

  function mark(e) {
    return mine(e) ? "✓ your note" : e.notes ? `${e.notes} note${e.notes === 1 ? "" : "s"}` : "";
  }

  function drawList() {
    list.replaceChildren(...shown().map(i => {
      const e = episodes[i], li = document.createElement("li");
      li.setAttribute("role", "option");
      li.id = "ep-" + i;
      li.setAttribute("aria-selected", i === current ? "true" : "false");
      const box = document.createElement("input");
      box.type = "checkbox"; box.tabIndex = -1; box.checked = selected.has(e.episode_id);
      box.setAttribute("aria-label", "select for export");
      box.addEventListener("change", ev => toggle(i, ev.target.checked));
      const text = document.createElement("span");
      text.append(`${e.episode_id} · ${e.policy} · ${e.steps} steps · return `, numberSpan(e.return));
      const noted = document.createElement("span");
      noted.className = "mark";
      noted.textContent = mark(e);
      li.append(box, text, noted);
      li.addEventListener("click", ev => { if (ev.target.tagName !== "INPUT") open(i); });
      return li;
    }));
    countQueue();
  }

  function countQueue() {
    $("queue-count").textContent = `${episodes.filter(mine).length} of ${episodes.length} episodes have your note`;
  }

  // The notes of episode `i` changed (it was reopened): its mark in the list and the queue count follow.
  function noted(i, notes) {
    const e = episodes[i];
    e.notes = notes.length;
    e.annotators = [...new Set(notes.map(n => n.annotator))];
    const li = $("ep-" + i);
    if (li) li.querySelector(".mark").textContent = mark(e);
    countQueue();
  }

  async function loadList() {
    const request = ++listRequest, name = datasetSelect.value;
    list.setAttribute("aria-busy", "true");  // until this list and its first episode are shown
    const out = name ? await api("GET", `/api/datasets/${name}/episodes?limit=1000`) : {episodes: []};
    if (request !== listRequest) return;  // a newer list was asked for meanwhile
    episodes = out.episodes, current = -1, detail = null, dataset = name;
    episodeRequest++;  // an episode still loading belongs to the old list
    selected.clear();
    stopEditing(false);
    drawList();
    const first = shown()[0];
    if (first !== undefined) await open(first); else render();
    if (request === listRequest) list.setAttribute("aria-busy", "false");
  }

  function toggle(i, on) {
    const id = episodes[i].episode_id;
    if (on) selected.add(id); else selected.delete(id);
    const li = $("ep-" + i);
    if (li) li.querySelector("input").checked = on;
  }

  async function open(i) {
    const request = ++episodeRequest;
    if (editing && episodes[i] && episodes[i].episode_id !== editing.episode_id) stopEditing(true);
    current = i;
    for (const li of list.children) li.setAttribute("aria-selected", li.id === "ep-" + i ? "true" : "false");
    list.setAttribute("aria-activedescendant", "ep-" + i);
    const li = $("ep-" + i);
    if (li) li.scrollIntoView({block: "nearest"});
    const got = await api("GET", `/api/datasets/${dataset}/episode?episode_id=${encodeURIComponent(episodes[i].episode_id)}`);
    if (request !== episodeRequest) return;  // another episode (or list) was asked for meanwhile
    // The episode on screen opened again (a click on it while it loads or after): the step the person is on stays.
    const same = detail && detail.metadata.episode_id === got.metadata.episode_id;
    step = same ? Math.min(step, got.steps.length - 1) : 0;
    detail = got;
    noted(i, detail.annotations);
    render();
  }

  function cell(value) {
    const td = document.createElement("td");
    if (typeof value === "number" && !Number.isInteger(value)) { td.textContent = rounded(value); td.title = String(value); }
    else td.textContent = value;
    return td;
  }

  function noteView(n) {
    const div = document.createElement("div");
    div.className = "note";
    div.dataset.noteId = n.note_id;
    const text = document.createElement("span");
    text.textContent = `${n.step === null ? "episode" : "step " + n.step} · ${n.annotator}: ${n.text}` +
      (n.tags.length ? ` [${n.tags.join(", ")}]` : "");
    div.appendChild(text);
    if (n.revision > 1) {
      const edited = document.createElement("span");
      edited.className = "edited";
      edited.textContent = ` (edited${n.edited_by && n.edited_by !== n.annotator ? " by " + n.edited_by : ""})`;
      edited.title = `revision ${n.revision}` + (n.edited_time ? `, ${new Date(n.edited_time * 1000).toLocaleString()}` : "");
      div.appendChild(edited);
    }
    if (n.annotator === session.annotator) {  // a person changes only their own notes
      const edit = document.createElement("button");
      edit.className = "edit"; edit.textContent = "Edit";
      edit.addEventListener("click", () => startEditing(n));
      const del = document.createElement("button");
      del.className = "delete"; del.textContent = "Delete";
      del.addEventListener("click", () => {
        if (del.dataset.armed !== "true") {  // two clicks: a stray one deletes nothing
          del.dataset.armed = "true"; del.textContent = "Confirm delete";
          setTimeout(() => { del.dataset.armed = ""; del.textContent = "Delete"; }, 5000);
          return;
        }
        submit("/annotate/delete", {dataset, episode_id: detail.metadata.episode_id, note_id: n.note_id,
                                    revision: n.revision}, null);
      });
      div.append(" ", edit, " ", del);
    }
    return div;
  }

  function render() {
    $("episode-title").textContent = detail ? detail.metadata.episode_id : "No episode";
    const meta = detail ? detail.metadata : {};
    $("episode-meta").textContent = ["task", "policy", "annotator", "task_config"]
      .filter(k => meta[k] !== undefined && meta[k] !== "").map(k => `${k} ${meta[k]}`).join(" · ");
    const steps = detail ? detail.steps : [];
    $("step-label").textContent = detail ? `step ${step} of ${steps.length - 1}` : "";
    drawSteps($("board"), detail, step);
    $("steps").replaceChildren(...steps.map((s, i) => {
      const tr = document.createElement("tr");
      if (i === step) tr.className = "current";
      tr.append(...[i, s.observation, s.action, s.reward, JSON.stringify(s.metadata)].map(cell));
      return tr;
    }));
    $("notes").replaceChildren(...(detail ? detail.annotations : []).map(noteView));
    const pending = $("note-saving");  // beside the notes, not among them: it is not stored yet
    pending.hidden = saving === null;
    pending.textContent = saving === null ? "" : `Saving “${saving}”…`;
    $("history").replaceChildren(...(detail ? detail.changes : []).slice().reverse().map(c => {
      const li = document.createElement("li");
      li.textContent = `${c.version}: note ${c.note_id} ${CHANGED[c.op] || c.op} by ${c.annotator}` +
        (c.op === "delete" ? ` (its text is in the version before)` : ` (revision ${c.revision})`) +
        ` · ${new Date(c.time * 1000).toLocaleString()}`;
      return li;
    }));
  }

  function move(delta) {
    if (!detail) return;
    step = Math.min(detail.steps.length - 1, Math.max(0, step + delta));
    render();
  }

  function startEditing(n) {
    editMode({episode_id: detail.metadata.episode_id, note_id: n.note_id, revision: n.revision});
    noteText.value = n.text;
    noteTags.value = n.tags.join(", ");
    noteText.focus();
  }

  function editMode(edit) {
    editing = edit;
    saveButton.textContent = "Save edit";
    $("cancel-edit").hidden = false;
    $("note-heading").textContent = `Edit note ${edit.note_id}`;
  }

  // Leaves edit mode; `clear`: the edited text goes too (the note itself is unchanged).
  function stopEditing(clear) {
    if (editing && clear) { noteText.value = ""; noteTags.value = ""; say("Edit cancelled: the note is unchanged."); }
    editing = null;
    saveButton.textContent = "Save as new version";
    $("cancel-edit").hidden = true;
    $("note-heading").textContent = "Annotate";
  }

  function saveNote() {
    if (!detail) return;
    const text = noteText.value, tags = noteTags.value.split(",").map(t => t.trim()).filter(Boolean);
    if (!text && !tags.length) { say(editing ? "Give a text or a tag (or delete the note)." : "Type a note or a tag first.", true); return; }
    const extra = Array.from(text).length - MAX_NOTE;
    if (extra > 0) { say(`The note is ${extra} characters over the limit of ${MAX_NOTE}: shorten it to save it (nothing was cut).`, true); return; }
    if (editing) {
      submit("/annotate/edit", {dataset, episode_id: editing.episode_id, note_id: editing.note_id,
                                revision: editing.revision, text, tags}, noteTags.value);
    } else {
      const scope = document.querySelector('input[name="scope"]:checked').value;
      submit("/annotate", {dataset, episode_id: detail.metadata.episode_id, step: scope === "step" ? step : null,
                           text, tags}, noteTags.value);
    }
  }

  // Sends one change of the notes (`tagsTyped`: the tags box as typed, for a save from the boxes; null for a
  // delete). The boxes are free at once; on failure their text comes back, before anything typed since.
  async function submit(path, body, tagsTyped) {
    if (saving !== null) { say("Still saving the last change; what you type stays in the box.", true); return; }
    const same = failed && failed.path === path && JSON.stringify(failed.body) === JSON.stringify(body);
    const key = same ? failed.key : newClientKey(), wasEditing = editing;
    failed = null;
    saving = body.text === undefined ? `delete ${body.note_id}` : body.text;
    if (tagsTyped !== null) { noteText.value = ""; noteTags.value = ""; stopEditing(false); }
    render();
    try {
      const out = await api("POST", `/api/sessions/${session.session_id}${path}`, {...body, client_key: key});
      say(out.duplicate ? `This change was already saved (${out.version}): it is stored once.` : `Saved as ${out.version}.`);
    } catch (e) {
      failed = {path, body, key};
      if (tagsTyped !== null) {
        noteText.value = noteText.value ? `${body.text} ${noteText.value}` : body.text;
        noteTags.value = noteTags.value ? `${tagsTyped}, ${noteTags.value}` : tagsTyped;
        if (wasEditing) editMode(wasEditing);
      }
      saving = null;
      render();
      say(`${e.message}` + (tagsTyped !== null ? " (the note is back in the box: save again to retry)" : ""), true);
      return;
    }
    saving = null;
    const shownId = detail && detail.metadata.episode_id, keep = step;
    await open(current);
    if (detail && detail.metadata.episode_id === shownId) { step = Math.min(keep, detail.steps.length - 1); render(); }
  }

  async function exportSelection() {
    try {
      const out = await api("POST", `/api/sessions/${session.session_id}/export`, {dataset,
        episode_ids: [...selected], name: $("export-name").value});
      say(`Exported ${out.episodes} episode${out.episodes === 1 ? "" : "s"} to ${out.export}. Build it for tfds.load ` +
          `with: python -m creator_web.export_builder DATA/${out.export} --out DIR`);
    } catch (e) { say(e.message, true); }
  }

  // The page's shortcuts (see the hint under the list).
  function shortcut(event) {
    const visible = shown(), at = visible.indexOf(current);
    if (event.key === "ArrowRight") { event.preventDefault(); move(1); }
    else if (event.key === "ArrowLeft") { event.preventDefault(); move(-1); }
    else if (event.key === "ArrowDown") { event.preventDefault(); if (at + 1 < visible.length) open(visible[at + 1]); }
    else if (event.key === "ArrowUp") { event.preventDefault(); if (at > 0) open(visible[at - 1]); }
    else if (event.key === "x" && current >= 0) toggle(current, !selected.has(episodes[current].episode_id));
    else if (event.key === "n") {
      const order = [...visible.slice(at + 1), ...visible.slice(0, at + 1)];
      const next = order.find(i => !mine(episodes[i]));
      if (next === undefined) say("Your queue is empty: every episode listed has your note.");
      else open(next);
    }
  }

  $("prev").addEventListener("click", () => move(-1));
  $("next").addEventListener("click", () => move(1));
  saveButton.addEventListener("click", saveNote);
  $("cancel-edit").addEventListener("click", () => stopEditing(true));
  $("export").addEventListener("click", exportSelection);
  datasetSelect.addEventListener("change", loadList);
  filter.addEventListener("change", () => { drawList(); });
  document.addEventListener("keydown", event => {
    const target = event.target;
    if (event.ctrlKey || event.metaKey) return;
    if (target === noteText || target === noteTags) {
      if (event.key === "Enter" && !event.isComposing && event.keyCode !== 229) { event.preventDefault(); saveNote(); return; }
      if (event.key === "Escape") { event.preventDefault(); list.focus(); return; }
      // while both boxes are empty nothing is being written: the arrows are the page's
      if (!ARROWS.includes(event.key) || noteText.value || noteTags.value || event.altKey || event.shiftKey) return;
    } else if (target === datasetSelect || target === filter) {
      // the arrows are the page's (shortcut prevents the select's own change); Alt+↓ opens the list
      if (!ARROWS.includes(event.key) || event.altKey) return;
    } else if (["INPUT", "SELECT", "TEXTAREA"].includes(target.tagName)) return;
    shortcut(event);
  });
  await loadList();
})();
