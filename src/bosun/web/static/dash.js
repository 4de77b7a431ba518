// Live updates: one server-sent event stream per page. The server says what changed; the page's
// fragments that follow it (hx-trigger="bosun:runs|run|plan from:body") fetch themselves again.
(function () {
  "use strict";
  var conn = document.getElementById("conn");
  var live = document.body.getAttribute("data-live") || "";
  var url = "/events";
  if (live.indexOf("run:") === 0) url += "?run=" + encodeURIComponent(live.slice(4));
  if (live.indexOf("plan:") === 0) url += "?plan=" + encodeURIComponent(live.slice(5));
  function status(text, cls) {
    if (!conn) return;
    conn.textContent = text;
    conn.className = "conn " + cls;
  }
  function fire(name) {
    document.body.dispatchEvent(new CustomEvent("bosun:" + name, { bubbles: true }));
  }
  var source = new EventSource(url);
  source.addEventListener("open", function () { status("live", "on"); });
  source.addEventListener("error", function () { status("reconnecting", "off"); });
  ["runs", "run", "plan"].forEach(function (name) {
    source.addEventListener(name, function () { fire(name); });
  });
  // Sections the reader opened stay open when the run fragment is swapped in again.
  var opened = {};
  document.addEventListener("toggle", function (ev) {
    var el = ev.target;
    if (el && el.id && el.tagName === "DETAILS") opened[el.id] = el.open;
  }, true);
  document.body.addEventListener("htmx:afterSwap", function () {
    Object.keys(opened).forEach(function (id) {
      var el = document.getElementById(id);
      if (el) el.open = opened[id];
    });
  });
})();
