// The SQL console and saved-query pages: the chart (vega-embed, served by this app), the query
// history of this browser session (sessionStorage: it never leaves the browser), where the last
// error points in the SQL, saving, changing and deleting saved queries (JSON to /sql/saved).
(function () {
  "use strict";
  var HISTORY = "balance.sql.history";
  var MAX_HISTORY = 50;

  function $(id) { return document.getElementById(id); }

  function drawCharts() {
    var holders = document.querySelectorAll("div.vis[data-spec]");
    document.body.dataset.charts = String(holders.length);
    if (!holders.length) { document.body.dataset.rendered = "0"; return; }
    var done = 0;
    holders.forEach(function (el) {
      var spec = JSON.parse($(el.dataset.spec).textContent);
      window.vegaEmbed(el, spec, { renderer: "svg", actions: false })
        .then(function () { el.dataset.rendered = "1"; })
        .catch(function (err) { el.dataset.rendered = "error"; el.textContent = "Chart failed: " + err; console.error(err); })
        .finally(function () { done += 1; if (done === holders.length) { document.body.dataset.rendered = String(done); } });
    });
  }

  // -- history ----------------------------------------------------------------------------------
  function loadHistory() {
    try { return JSON.parse(sessionStorage.getItem(HISTORY) || "[]"); } catch (e) { return []; }
  }
  function saveHistory(items) {
    try { sessionStorage.setItem(HISTORY, JSON.stringify(items.slice(0, MAX_HISTORY))); } catch (e) { /* full: keep what is there */ }
  }
  function remember() {
    var text = $("sql-text");
    if (!text || !text.value.trim()) { return; }
    var status = $("sql-status"), error = $("sql-error");
    if (!status && !error) { return; }  // shown, not run (a parameter to fill, another site)
    var entry = { sql: text.value, at: new Date().toISOString(), url: location.pathname + location.search };
    if (error) {
      entry.error = error.dataset.kind;
      entry.message = (error.querySelector("pre") || error).textContent.slice(0, 300);
      if (error.dataset.line) { entry.line = +error.dataset.line; entry.column = +error.dataset.column; }
    } else {
      entry.rows = +status.dataset.rows;
    }
    var items = loadHistory();
    if (items.length && items[0].url === entry.url) { items.shift(); }
    items.unshift(entry);
    saveHistory(items);
  }
  function showHistory() {
    var list = $("history");
    if (!list) { return; }
    list.textContent = "";
    var items = loadHistory();
    if (!items.length) {
      var none = document.createElement("li");
      none.className = "meta";
      none.textContent = "Nothing run yet in this session.";
      list.appendChild(none);
    }
    items.forEach(function (item) {
      var li = document.createElement("li");
      var a = document.createElement("a");
      a.href = item.url;
      var code = document.createElement("code");
      code.textContent = item.sql.length > 200 ? item.sql.slice(0, 200) + "…" : item.sql;
      a.appendChild(code);
      li.appendChild(a);
      var meta = document.createElement("small");
      var when = item.at.slice(11, 19);
      if (item.error) {
        li.className = "failed";
        meta.textContent = " " + when + " · " + item.error + (item.line ? " at line " + item.line + ", column " + item.column : "") + ": " + item.message;
      } else {
        meta.textContent = " " + when + " · " + item.rows + " rows";
      }
      li.appendChild(meta);
      list.appendChild(li);
    });
    var clear = $("history-clear");
    if (clear) { clear.onclick = function () { saveHistory([]); showHistory(); }; }
  }

  // -- the error's position -----------------------------------------------------------------------
  function pointAtError() {
    var error = $("sql-error"), text = $("sql-text");
    if (!error || !text || error.dataset.at === undefined) { return; }
    // data-at counts line ends as the box shows them (LF; a browser sends CRLF)
    var shown = text.value, i = Math.min(+error.dataset.at, shown.length);
    var end = i;
    while (end < shown.length && /[\w$.:]/.test(shown[end])) { end += 1; }
    text.focus();
    text.setSelectionRange(i, Math.max(end, i + 1));
    text.dataset.errorAt = String(i);
  }

  // -- saving -------------------------------------------------------------------------------------
  function send(method, url, body) {
    return fetch(url, {
      method: method,
      headers: { "Content-Type": "application/json", "Accept": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
      credentials: "same-origin",
    }).then(function (resp) {
      if (resp.status === 204) { return {}; }
      return resp.json().then(function (data) {
        if (!resp.ok) { throw new Error((data.error || resp.status) + ": " + (data.message || "")); }
        return data;
      });
    });
  }
  function wireSave() {
    var form = $("save-form");
    if (!form) { return; }
    form.addEventListener("submit", function (ev) {
      ev.preventDefault();
      var status = $("save-status");
      var params = [];
      document.querySelectorAll("#save-params tr[data-param]").forEach(function (row) {
        var def = row.querySelector("input[name=default]").value;
        params.push({ name: row.dataset.param, type: row.querySelector("select[name=type]").value, default: def === "" ? null : def });
      });
      var body = {
        title: $("save-title").value,
        description: $("save-description").value,
        sql: $("sql-text").value,
        params: params,
        chart: null,
      };
      var withChart = $("save-chart");
      if (withChart && withChart.checked) { body.chart = JSON.parse($("save-chart-spec").textContent); }
      if ($("save-slug").value) { body.slug = $("save-slug").value; }
      if (form.dataset.version) { body.version = +form.dataset.version; }
      status.textContent = "saving…";
      send(form.dataset.method, form.dataset.url, body).then(function (saved) {
        status.textContent = "saved";
        document.body.dataset.saved = saved.slug;
        location.href = saved.url;
      }).catch(function (err) {
        status.textContent = String(err.message || err);
        status.className = "error";
        document.body.dataset.saveError = String(err.message || err);
      });
    });
  }
  function wireDelete() {
    var button = $("delete");
    if (!button) { return; }
    button.addEventListener("click", function () {
      if (!window.confirm("Delete this saved query?")) { return; }
      send("DELETE", button.dataset.url).then(function () { location.href = "/sql"; })
        .catch(function (err) { $("save-status").textContent = String(err.message || err); });
    });
  }

  function wireKeys() {
    var text = $("sql-text"), form = $("sql-form");
    if (!text || !form) { return; }
    text.addEventListener("keydown", function (ev) {
      if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey)) { ev.preventDefault(); form.submit(); }
    });
  }

  function start() {
    drawCharts();
    remember();
    showHistory();
    pointAtError();
    wireSave();
    wireDelete();
    wireKeys();
    document.body.dataset.ready = "1";
  }
  if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", start); } else { start(); }
})();
