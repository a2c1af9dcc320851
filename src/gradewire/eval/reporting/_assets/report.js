// The sample table of a gradewire report: sort, filter, search and pages over the rows
// embedded as JSON. Every value is put on the page with textContent, never as HTML.
"use strict";
(function () {
  const PAGE = 50;
  const data = JSON.parse(document.getElementById("gw-data").textContent);
  const graders = data.graders;
  const rows = data.rows.map(function (row, index) {
    const turns = (row.input && row.input.turns) || [];
    let prompt = "", completion = "";
    for (const turn of turns) {
      if (turn.role === "user") prompt = turn.content;
    }
    const last = turns[turns.length - 1];
    if (last && last.role === "assistant") completion = last.content;
    return { index: index, row: row, prompt: prompt, completion: completion, text: null };
  });
  const state = { key: "index", dir: 1, page: 0, grader: "", status: "", min: null, max: null, query: "", open: new Set() };
  const $ = function (id) { return document.getElementById(id); };

  function el(tag, text, cls) {
    const node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = String(text);
    if (cls) node.className = cls;
    return node;
  }
  function outcome(item, key) {
    const result = item.row.grades && item.row.grades[key];
    return result || { status: "missing" };
  }
  function score(item, key) {
    const result = outcome(item, key);
    return result.status === "ok" && result.grade ? result.grade.value : null;
  }
  function haystack(item) {
    if (item.text === null) {
      const parts = [item.row.id, item.prompt, item.completion];
      for (const key of graders) {
        const result = outcome(item, key);
        if (result.grade && result.grade.reasoning) parts.push(result.grade.reasoning);
        if (result.message) parts.push(result.message);
      }
      item.text = parts.join("\n").toLowerCase();
    }
    return item.text;
  }
  function keep(item) {
    const keys = state.grader ? [state.grader] : graders;
    if (state.status) {
      if (!keys.some(function (key) { return outcome(item, key).status === state.status; })) return false;
    }
    if (state.min !== null || state.max !== null) {
      const inRange = keys.some(function (key) {
        const value = score(item, key);
        return value !== null && (state.min === null || value >= state.min) &&
          (state.max === null || value <= state.max);
      });
      if (!inRange) return false;
    }
    return !state.query || haystack(item).indexOf(state.query) >= 0;
  }
  function sortValue(item) {
    if (state.key === "index") return item.index;
    if (state.key === "id") return String(item.row.id);
    if (state.key === "prompt") return item.prompt;
    if (state.key === "completion") return item.completion;
    return score(item, state.key.slice(2));
  }
  function compare(a, b) {
    const x = sortValue(a), y = sortValue(b);
    if (x === y) return a.index - b.index;
    if (x === null) return 1;  // unscored rows last in either direction
    if (y === null) return -1;
    return (x < y ? -1 : 1) * state.dir;
  }
  function cut(text, n) { return text.length > n ? text.slice(0, n - 1) + "…" : text; }

  function scoreCell(item, key) {
    const result = outcome(item, key);
    const td = el("td", null, "num " + result.status);
    if (result.status === "ok") td.textContent = formatNumber(result.grade.value);
    else if (result.status === "error") { td.textContent = "error"; td.title = result.message || ""; }
    else if (result.status === "abstained") { td.textContent = "abstained"; td.title = result.message || ""; }
    else td.textContent = "";
    return td;
  }
  function formatNumber(value) {
    return Number.isInteger(value) ? String(value) : value.toFixed(3);
  }
  function gradeTree(grade) {
    const li = el("li");
    li.appendChild(el("span", grade.grader_key, "key"));
    li.appendChild(el("span", " " + formatNumber(grade.value), "value"));
    if (grade.weight !== undefined && grade.weight !== 1) li.appendChild(el("span", " (weight " + grade.weight + ")", "weight"));
    if (grade.reasoning) li.appendChild(el("div", grade.reasoning, "reasoning"));
    if (grade.info && Object.keys(grade.info).length) li.appendChild(el("pre", JSON.stringify(grade.info, null, 2), "info"));
    if (grade.children && grade.children.length) {
      const ul = el("ul");
      for (const child of grade.children) ul.appendChild(gradeTree(child));
      li.appendChild(ul);
    }
    return li;
  }
  function details(item) {
    const box = el("div", null, "details");
    box.appendChild(el("h4", "Conversation"));
    for (const turn of (item.row.input && item.row.input.turns) || []) {
      const block = el("div", null, "turn " + turn.role);
      block.appendChild(el("div", turn.role, "role"));
      block.appendChild(el("pre", turn.content));
      box.appendChild(block);
    }
    const metadata = item.row.input && item.row.input.metadata;
    if (metadata && Object.keys(metadata).length) {
      box.appendChild(el("h4", "Metadata"));
      box.appendChild(el("pre", JSON.stringify(metadata, null, 2)));
    }
    box.appendChild(el("h4", "Grades"));
    for (const key of graders) {
      const result = outcome(item, key);
      const section = el("div", null, "grade " + result.status);
      section.appendChild(el("div", key + ": " + result.status, "grade-head"));
      if (result.status === "ok") {
        const ul = el("ul", null, "tree");
        ul.appendChild(gradeTree(result.grade));
        section.appendChild(ul);
      } else if (result.message) {
        section.appendChild(el("pre", result.message));
      }
      if (result.usage && Object.keys(result.usage).length) section.appendChild(el("div", "usage: " + JSON.stringify(result.usage), "usage"));
      box.appendChild(section);
    }
    return box;
  }

  function render() {
    const shown = rows.filter(keep).sort(compare);
    const pages = Math.max(1, Math.ceil(shown.length / PAGE));
    state.page = Math.min(state.page, pages - 1);
    const body = $("gw-rows");
    body.replaceChildren();
    const width = 3 + graders.length;
    for (const item of shown.slice(state.page * PAGE, (state.page + 1) * PAGE)) {
      const tr = el("tr", null, "row");
      tr.dataset.index = String(item.index);
      tr.appendChild(el("td", String(item.row.id), "id"));
      tr.appendChild(el("td", cut(item.prompt, 140), "text"));
      tr.appendChild(el("td", cut(item.completion, 140), "text"));
      for (const key of graders) tr.appendChild(scoreCell(item, key));
      tr.addEventListener("click", function () {
        if (state.open.has(item.index)) state.open.delete(item.index); else state.open.add(item.index);
        render();
      });
      body.appendChild(tr);
      if (state.open.has(item.index)) {
        const extra = el("tr", null, "expanded");
        const td = el("td");
        td.colSpan = width;
        td.appendChild(details(item));
        extra.appendChild(td);
        body.appendChild(extra);
      }
    }
    $("gw-count").textContent = shown.length + " of " + rows.length + " samples";
    $("gw-page").textContent = "page " + (state.page + 1) + " of " + pages;
    $("gw-prev").disabled = state.page === 0;
    $("gw-next").disabled = state.page >= pages - 1;
    for (const th of document.querySelectorAll("#gw-table th[data-key]")) {
      th.classList.toggle("asc", th.dataset.key === state.key && state.dir > 0);
      th.classList.toggle("desc", th.dataset.key === state.key && state.dir < 0);
    }
  }

  function header() {
    const tr = $("gw-head");
    const columns = [["id", "id"], ["prompt", "prompt"], ["completion", "completion"]];
    for (const key of graders) columns.push(["g:" + key, key]);
    for (const [key, label] of columns) {
      const th = el("th", label);
      th.dataset.key = key;
      th.addEventListener("click", function () {
        if (state.key === key) state.dir = -state.dir; else { state.key = key; state.dir = key.startsWith("g:") ? -1 : 1; }
        state.page = 0;
        render();
      });
      tr.appendChild(th);
    }
    const select = $("gw-grader");
    for (const key of graders) {
      const option = el("option", key);
      option.value = key;
      select.appendChild(option);
    }
  }
  function number(text) {
    const value = parseFloat(text);
    return Number.isFinite(value) ? value : null;
  }
  function wire() {
    let timer = null;
    $("gw-search").addEventListener("input", function (event) {
      clearTimeout(timer);
      timer = setTimeout(function () { state.query = event.target.value.trim().toLowerCase(); state.page = 0; render(); }, 120);
    });
    $("gw-grader").addEventListener("change", function (event) { state.grader = event.target.value; state.page = 0; render(); });
    $("gw-status").addEventListener("change", function (event) { state.status = event.target.value; state.page = 0; render(); });
    $("gw-min").addEventListener("input", function (event) { state.min = number(event.target.value); state.page = 0; render(); });
    $("gw-max").addEventListener("input", function (event) { state.max = number(event.target.value); state.page = 0; render(); });
    $("gw-prev").addEventListener("click", function () { state.page -= 1; render(); });
    $("gw-next").addEventListener("click", function () { state.page += 1; render(); });
  }
  header();
  wire();
  render();
  document.body.dataset.ready = "1";
})();
