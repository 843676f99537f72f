// The review page: browse a dataset's episodes, replay one step by step, annotate, export a selection.
"use strict";
(async () => {
  const session = await ensureSession();
  const datasetSelect = document.getElementById("dataset"), list = document.getElementById("episodes");
  let episodes = [], current = -1, detail = null, step = 0, dataset = "";
  // Replies may arrive out of order (the initial list and a quick change of dataset): only the newest
  // request of each kind is applied, so the list, its dataset and the open episode always agree.
  let listRequest = 0, episodeRequest = 0;
  const selected = new Set();

  const listed = await api("GET", "/api/datasets");
  for (const name of Object.keys(listed.datasets)) datasetSelect.add(new Option(name, name));
  for (const [name, why] of Object.entries(listed.damaged)) {  // shown, not hidden: a damaged dataset is not a smaller one
    const option = new Option(`${name} (damaged: ${why})`, "");
    option.disabled = true;
    datasetSelect.add(option);
  }

  async function loadList() {
    const request = ++listRequest, name = datasetSelect.value;
    list.setAttribute("aria-busy", "true");  // until this list and its first episode are shown
    const out = name ? await api("GET", `/api/datasets/${name}/episodes?limit=1000`) : {episodes: []};
    if (request !== listRequest) return;  // a newer list was asked for meanwhile
    episodes = out.episodes, current = -1, detail = null, dataset = name;
    episodeRequest++;  // an episode still loading belongs to the old list
    selected.clear();
    list.replaceChildren(...episodes.map((e, i) => {
      const li = document.createElement("li");
      li.setAttribute("role", "option");
      li.id = "ep-" + i;
      li.innerHTML = `<input type="checkbox" tabindex="-1" aria-label="select for export"> <span></span>`;
      li.querySelector("span").textContent = `${e.episode_id} · ${e.policy} · ${e.steps} steps · return ${e.return}`;
      li.querySelector("input").addEventListener("change", ev => toggle(i, ev.target.checked));
      li.addEventListener("click", ev => { if (ev.target.tagName !== "INPUT") open(i); });
      return li;
    }));
    if (episodes.length) await open(0); else render();
    if (request === listRequest) list.setAttribute("aria-busy", "false");
  }

  function toggle(i, on) {
    const id = episodes[i].episode_id;
    if (on) selected.add(id); else selected.delete(id);
    list.children[i].querySelector("input").checked = on;
  }

  async function open(i) {
    const request = ++episodeRequest;
    current = i;
    for (const li of list.children) li.setAttribute("aria-selected", li.id === "ep-" + i ? "true" : "false");
    list.setAttribute("aria-activedescendant", "ep-" + i);
    const got = await api("GET", `/api/datasets/${dataset}/episode?episode_id=${encodeURIComponent(episodes[i].episode_id)}`);
    if (request !== episodeRequest) return;  // another episode (or list) was asked for meanwhile
    detail = got, step = 0;
    render();
  }

  function render() {
    document.getElementById("episode-title").textContent = detail ? detail.metadata.episode_id : "No episode";
    const meta = detail ? detail.metadata : {};
    document.getElementById("episode-meta").textContent = ["task", "policy", "annotator", "task_config"]
      .filter(k => meta[k] !== undefined && meta[k] !== "").map(k => `${k} ${meta[k]}`).join(" · ");
    const steps = detail ? detail.steps : [];
    document.getElementById("step-label").textContent = detail ? `step ${step} of ${steps.length - 1}` : "";
    drawSteps(document.getElementById("board"), detail, step);
    document.getElementById("steps").replaceChildren(...steps.map((s, i) => {
      const tr = document.createElement("tr");
      if (i === step) tr.className = "current";
      for (const value of [i, s.observation, s.action, s.reward, JSON.stringify(s.metadata)]) {
        const td = document.createElement("td"); td.textContent = value; tr.appendChild(td);
      }
      return tr;
    }));
    const notes = document.getElementById("notes");
    notes.replaceChildren(...(detail ? detail.annotations : []).map(n => {
      const p = document.createElement("p");
      p.textContent = `${n.step === null ? "episode" : "step " + n.step} · ${n.annotator}: ${n.text} ${n.tags.length ? "[" + n.tags.join(", ") + "]" : ""}`;
      return p;
    }));
  }

  function move(delta) {
    if (!detail) return;
    step = Math.min(detail.steps.length - 1, Math.max(0, step + delta));
    render();
  }

  async function saveNote() {
    if (!detail) return;
    const scope = document.querySelector('input[name="scope"]:checked').value;
    const tags = document.getElementById("note-tags").value.split(",").map(t => t.trim()).filter(Boolean);
    try {
      const out = await api("POST", `/api/sessions/${session.session_id}/annotate`, {dataset,
        episode_id: detail.metadata.episode_id, step: scope === "step" ? step : null,
        text: document.getElementById("note-text").value, tags});
      say(`Saved as ${out.version}.`);
      document.getElementById("note-text").value = "";
      document.getElementById("note-tags").value = "";
      const keep = step;
      await open(current);
      step = keep; render();
    } catch (e) { say(e.message, true); }
  }

  async function exportSelection() {
    try {
      const out = await api("POST", `/api/sessions/${session.session_id}/export`, {dataset,
        episode_ids: [...selected], name: document.getElementById("export-name").value});
      say(`Exported ${out.episodes} episode${out.episodes === 1 ? "" : "s"} to ${out.export}. Build it for tfds.load ` +
          `with: python -m creator_web.export_builder DATA/${out.export} --out DIR`);
    } catch (e) { say(e.message, true); }
  }

  document.getElementById("prev").addEventListener("click", () => move(-1));
  document.getElementById("next").addEventListener("click", () => move(1));
  document.getElementById("save-note").addEventListener("click", saveNote);
  document.getElementById("export").addEventListener("click", exportSelection);
  datasetSelect.addEventListener("change", loadList);
  document.addEventListener("keydown", event => {
    if (["INPUT", "SELECT", "TEXTAREA"].includes(event.target.tagName)) return;
    if (event.key === "ArrowRight") { event.preventDefault(); move(1); }
    else if (event.key === "ArrowLeft") { event.preventDefault(); move(-1); }
    else if (event.key === "ArrowDown" && current + 1 < episodes.length) { event.preventDefault(); open(current + 1); }
    else if (event.key === "ArrowUp" && current > 0) { event.preventDefault(); open(current - 1); }
    else if (event.key === "x" && current >= 0) toggle(current, !selected.has(episodes[current].episode_id));
  });
  await loadList();
})();
