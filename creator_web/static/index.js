// The start page: opens a session (annotator, task, rule; a secret when the server lists its annotators) and
// goes on to the page asked for in ?next=, which must be one of the tool's own pages. A link whose session was
// refused leads here with its values (?annotator=&task=&<config keys>) filled in, to be fixed, never sent as they are;
// so does "Sign in again" on a page whose session ended, and the page says why it ended (and whether what was typed
// is kept). A sign-in refused for a while says for how long.
"use strict";
(() => {
  // The submit handler is attached at once: an Enter pressed while the task list loads must not fall through to
  // the browser's own GET submission of the form (it waits for the list instead).
  const select = document.getElementById("task"), annotator = document.getElementById("annotator");
  const linked = new URLSearchParams(location.search).get("annotator");
  if (linked) annotator.value = linked;  // at once: a name typed while the lists load is not overwritten
  const loaded = Promise.all([api("GET", "/api/tasks"), api("GET", "/api/server")]).then(([tasks, server]) => {
    for (const name of Object.keys(tasks)) select.add(new Option(name, name));
    fillFromLink(tasks);
    showTask();
    document.getElementById("secret-row").hidden = server.sign_in !== "annotators";
    if (server.sign_in === "proxy") {  // the proxy names the person
      annotator.required = false;
      annotator.closest(".form-row").hidden = true;
    }
  });
  // The task and config values of a refused link, back in the form (a select only takes a value it offers).
  function fillFromLink(tasks) {
    const params = new URLSearchParams(location.search);
    const task = params.get("task");
    if (task && !(task in tasks)) say(`Task ${task} is not offered here: choose one of ${Object.keys(tasks).join(", ")}.`, true);
    if (task in tasks) select.value = task;
    for (const field of document.querySelectorAll(`[data-task="${select.value}"] [data-config]`)) {
      const value = params.get(field.dataset.config);
      if (value && [...field.options].some(o => o.value === value)) field.value = value;
    }
    for (const id of ["seed", "answer"]) if (params.get(id)) document.getElementById(id).value = params.get(id);
  }
  // Only the chosen task's settings are shown and sent.
  function showTask() {
    for (const part of document.querySelectorAll("[data-task]")) part.hidden = part.dataset.task !== select.value;
  }
  select.addEventListener("change", showTask);
  showSession(currentSession(), "no session");
  const notice = sessionStorage.getItem(NOTICE);  // why the last session ended: said once
  if (notice) { sessionStorage.removeItem(NOTICE); say(notice); }
  document.getElementById("start").addEventListener("submit", async event => {
    event.preventDefault();
    try {
      await loaded;
      const config = {};
      for (const field of document.querySelectorAll(`[data-task="${select.value}"] [data-config]`)) {
        config[field.dataset.config] = field.value;
      }
      const seed = document.getElementById("seed").value, answer = document.getElementById("answer").value;
      if (seed) config.seed = Number(seed);
      if (answer && select.value === "wordle") config.answer = answer.toLowerCase();
      const body = {task: select.value, config};
      if (annotator.value) body.annotator = annotator.value;
      const secret = document.getElementById("secret").value;
      if (secret) body.secret = secret;
      sessionStorage.removeItem(KEY);
      const session = await api("POST", "/api/sessions", body);
      sessionStorage.setItem(KEY, JSON.stringify(session));
      location.href = nextPage(new URLSearchParams(location.search).get("next"));
    } catch (e) { say(e.message, true); }
  });
})();
