// The filters of a gradewire compare page: show the pairs kept on the page by grader,
// outcome and slice, ordered by the chosen grader's change, and say how many pairs of
// that kind there are in all. The page's text is never read or written as HTML here.
"use strict";
(function () {
  const data = JSON.parse(document.getElementById("gw-data").textContent);
  const $ = function (id) { return document.getElementById(id); };
  const box = $("gw-pairs");
  if (!box) { document.body.dataset.ready = "1"; return; }
  const cards = Array.prototype.slice.call(box.querySelectorAll("article.pair"));
  function value(id) { const node = $(id); return node ? node.value : ""; }
  function matches(card, grader, outcome, slice) {
    if (slice !== "" && card.dataset.s !== slice) return false;
    if (grader !== "") {
      const got = card.dataset["o" + grader];
      return got !== undefined && (outcome === "" || got === outcome);
    }
    if (outcome === "") return true;
    return Object.keys(card.dataset).some(function (name) {
      return /^o\d+$/.test(name) && card.dataset[name] === outcome;
    });
  }
  function change(card, grader) {
    const d = parseFloat(card.dataset["d" + grader]);
    return Number.isFinite(d) ? d : -1;
  }
  function render() {
    const grader = value("gw-grader"), outcome = value("gw-outcome"), slice = value("gw-slice");
    const order = cards.slice().sort(function (x, y) {
      if (grader !== "") {
        const dx = change(x, grader), dy = change(y, grader);
        if (dx !== dy) return dy - dx;
      }
      return Number(x.dataset.rank) - Number(y.dataset.rank);
    });
    let shown = 0;
    for (const card of order) {
      const keep = matches(card, grader, outcome, slice);
      card.hidden = !keep;
      if (keep) shown += 1;
      box.appendChild(card);
    }
    const all = data.counts[grader + "|" + outcome + "|" + slice] || 0;
    $("gw-count").textContent = shown + " shown of " + all + " such pairs" +
      (all > shown ? " (" + (all - shown) + " left out of this page)" : "");
    $("gw-none").hidden = shown > 0;
  }
  for (const id of ["gw-grader", "gw-outcome", "gw-slice"]) {
    const node = $(id);
    if (node) node.addEventListener("change", render);
  }
  render();
  document.body.dataset.ready = "1";
})();
