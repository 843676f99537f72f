// The progress page: one row per annotator (sessions, finished episodes per task, judgements, standing notes),
// your own row marked; what the server could not read is listed under the table, never left out.
"use strict";
(async () => {
  const session = await ensureSession();
  const out = await api("GET", "/api/progress");
  const body = document.querySelector("#progress tbody");
  body.replaceChildren(...out.annotators.map(row => {
    const tr = document.createElement("tr");
    if (row.annotator === session.annotator) tr.className = "current";
    const played = Object.entries(row.episodes).map(([task, n]) => `${task} ${n}`).join(" · ") || "0";
    const last = row.last_session ? new Date(row.last_session * 1000).toLocaleString() : "";
    const cells = {annotator: row.annotator || "(none recorded)", sessions: row.sessions, last_session: last,
                   episodes: played, judgements: row.judgements, notes: row.notes};
    tr.replaceChildren(...Object.entries(cells).map(([field, value]) => {
      const td = document.createElement("td");
      td.dataset.field = field;
      td.textContent = String(value);
      return td;
    }));
    return tr;
  }));
  document.getElementById("problems").replaceChildren(...out.problems.map(text => {
    const li = document.createElement("li");
    li.className = "error";
    li.textContent = `Not counted: ${text}`;
    return li;
  }));
  if (!out.annotators.length) say("Nothing recorded yet.");
})();
