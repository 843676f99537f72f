// The judge page: two clips side by side; L / R / E / Space (or the buttons) record a judgement.
"use strict";
(async () => {
  const wantText = new URLSearchParams(location.search).get("view") === "text";  // read before the URL is tidied
  const session = await ensureSession();
  const base = `/api/sessions/${session.session_id}/judge`;
  const leftSelect = document.getElementById("left-ds"), rightSelect = document.getElementById("right-ds");
  // "Show as text" (or ?view=text) draws every clip as a transcript, step by step, whatever its task.
  const asText = document.getElementById("as-text");
  asText.checked = wantText;
  let pair = null, shownAt = 0, judged = 0, busy = false;

  // A server attached to a preference pipeline shows the pipeline's pairs: no datasets to pick then. Otherwise
  // the pickers start on the server's judge pair when it has one, else empty until the person chooses.
  const server = await api("GET", "/api/server");
  const fromPipeline = server.judge_source === "pipeline";
  document.getElementById("pick-datasets").hidden = fromPipeline;
  const datasets = fromPipeline ? [] : Object.keys((await api("GET", "/api/datasets")).datasets);
  for (const select of [leftSelect, rightSelect]) {
    select.add(new Option("— choose —", ""));
    for (const name of datasets) select.add(new Option(name, name));
  }
  const [leftDefault, rightDefault] = server.judge_default || ["", ""];
  if (datasets.includes(leftDefault) && datasets.includes(rightDefault)) {
    leftSelect.value = leftDefault;
    rightSelect.value = rightDefault;
  }

  function show() {
    for (const side of ["left", "right"]) {
      drawSteps(document.getElementById(side + "-board"), pair ? pair[side] : null);
      document.getElementById(side + "-id").textContent = pair ? pair[side].episode_id : "";
    }
    document.getElementById("count").textContent = `${judged} judged in this session`;
  }

  // Loads run one after another: two quick dataset changes must not race, or the pair shown could be an
  // older request's while the server holds the newer one as pending.
  let loading = Promise.resolve();
  function load() {
    loading = loading.then(fetchPair);
    return loading;
  }

  async function fetchPair() {
    if (!fromPipeline && !(leftSelect.value && rightSelect.value)) {
      pair = null;
      say("Choose the two datasets to judge.");
      show();
      return;
    }
    try {
      const wanted = fromPipeline ? {} : {left: leftSelect.value || null, right: rightSelect.value || null};
      wanted.view = asText.checked ? "text" : "task";
      pair = await api("POST", base + "/next", wanted);
      shownAt = performance.now();
      say("");
    } catch (e) {
      pair = null;
      say(e.message, e.status !== 404 && e.status !== 503);
      if (e.status === 503 && fromPipeline) setTimeout(load, 2000);  // a pipeline's queue is empty for now: ask again
    }
    show();
  }

  async function choose(label) {
    if (!pair || busy) return;
    busy = true;
    try {
      const out = await api("POST", base, {pair_id: pair.pair_id, label, seconds: (performance.now() - shownAt) / 1000});
      judged = out.judged;
      await load();
      // Said only once the next pair is shown and keys are taken again: a person (or a test) who reacts to
      // the message must not have the next key dropped while the pair is still loading.
      busy = false;
      if (pair) say(`Recorded “${label}”.`);
    } catch (e) { say(e.message, true); }
    busy = false;
  }

  for (const button of document.querySelectorAll(".choices button")) {
    button.addEventListener("click", () => choose(button.dataset.label));
  }
  document.addEventListener("keydown", event => {
    if (event.ctrlKey || event.metaKey || event.altKey || ["SELECT", "INPUT"].includes(event.target.tagName)) return;
    const label = {l: "left", r: "right", e: "equal", " ": "skip"}[event.key.toLowerCase()];
    if (label) { event.preventDefault(); choose(label); }
  });
  keepOnArrows(leftSelect);  // an arrow key never switches a dataset (the list opens with Alt+↓ or a click)
  keepOnArrows(rightSelect);
  asText.addEventListener("change", load);
  leftSelect.addEventListener("change", load);
  rightSelect.addEventListener("change", load);
  await load();
})();
