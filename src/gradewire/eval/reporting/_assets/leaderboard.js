// The filter of a gradewire leaderboard page: show one board (a grader, or a grader's
// slice) at a time. The page's text is never read or written as HTML here.
"use strict";
(function () {
  const select = document.getElementById("gw-board");
  const boards = Array.prototype.slice.call(document.querySelectorAll("section.board"));
  function render() {
    const chosen = select ? select.value : "";
    boards.forEach(function (board) {
      board.hidden = chosen !== "" && board.dataset.board !== chosen;
    });
  }
  if (select) { select.addEventListener("change", render); }
  render();
  document.body.dataset.ready = "1";
})();
