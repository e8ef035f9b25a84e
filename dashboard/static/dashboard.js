// Draws every chart of the page with vega-embed (served by this app: no CDN).
(function () {
  "use strict";
  var PANEL_MIN = 260; // px a facet panel needs with its axis labels
  // The server's specs have fixed sizes (what the SVG/PNG downloads draw); on the page each
  // chart fits its card: a single view takes the card's width ("container"), a grid of panels
  // takes as many columns as fit, and on a narrow screen legends go below the chart.
  function fit(spec, el) {
    var w = el.clientWidth || window.innerWidth;
    var out = Object.assign({}, spec);
    if (w < 640) {
      var config = Object.assign({}, out.config || {});
      config.legend = Object.assign({}, config.legend || {}, {
        orient: "bottom", direction: "horizontal", columns: Math.max(1, Math.floor(w / 110)),
      });
      out.config = config;
    }
    var plot = w - 130; // the plot's width once the y labels are beside it
    if (out.spec && out.facet) {
      var cols = Math.max(1, Math.min(out.columns || 1, Math.floor(w / PANEL_MIN)));
      var inner = Object.assign({}, out.spec);
      if (typeof inner.width === "number") {
        inner.width = Math.max(60, Math.min(inner.width, Math.floor(w / cols) - 140));
        plot = inner.width;
      }
      out.columns = cols;
      out.spec = inner;
    } else if (typeof out.width === "number") {
      out.width = "container";
      out.autosize = { type: "fit-x", contains: "padding" };
      el.classList.add("fits");
    }
    if (w < 640) { // long axis titles and labels are cut (with …) rather than widen the chart
      var conf = Object.assign({}, out.config || {});
      conf.axis = Object.assign({}, conf.axis || {}, { labelLimit: 120, titleLimit: Math.max(80, plot) });
      out.config = conf;
    }
    return out;
  }
  // A grid of panels whose labels make it wider than its card is drawn again with one column
  // fewer (then narrower panels), until it fits or cannot shrink further.
  function shrink(spec, over) {
    if (!(spec.spec && spec.facet)) { return null; }
    var out = Object.assign({}, spec, { spec: Object.assign({}, spec.spec) });
    if ((out.columns || 1) > 1) { out.columns -= 1; return out; }
    if (typeof out.spec.width === "number" && out.spec.width > 60) {
      out.spec.width = Math.max(60, out.spec.width - over - 2);
      return out;
    }
    return null;
  }
  function embed(el, spec, tries) {
    return window.vegaEmbed(el, spec, { renderer: "svg", actions: false }).then(function (res) {
      var over = el.scrollWidth - el.clientWidth;
      var smaller = over > 1 && tries > 0 ? shrink(spec, over) : null;
      if (smaller) { res.finalize(); el.textContent = ""; return embed(el, smaller, tries - 1); }
      return res;
    });
  }
  function draw() {
    var holders = document.querySelectorAll("div.vis[data-spec]");
    var pending = holders.length;
    document.body.dataset.charts = String(pending);
    if (!pending) { document.body.dataset.rendered = "0"; return; }
    var done = 0;
    holders.forEach(function (el) {
      var spec = fit(JSON.parse(document.getElementById(el.dataset.spec).textContent), el);
      embed(el, spec, 6)
        .then(function () { el.dataset.rendered = "1"; })
        .catch(function (err) { el.dataset.rendered = "error"; el.textContent = "Chart failed: " + err; console.error(err); })
        .finally(function () { done += 1; if (done === pending) { document.body.dataset.rendered = String(done); } });
    });
  }
  // A page shown on the default cut names the live version it used in its address (live=),
  // so that the link a designer copies shows the same release later (the server says if the
  // live release moved since).
  function pin() {
    var form = document.getElementById("filters");
    if (!form || !form.dataset.pin || !window.history.replaceState) { return; }
    var params = new URLSearchParams(window.location.search);
    if (params.has("client_version") || params.get("live") === form.dataset.pin) { return; }
    params.set("live", form.dataset.pin);
    window.history.replaceState(null, "", window.location.pathname + "?" + params.toString() + window.location.hash);
  }
  pin();
  if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", draw); } else { draw(); }
})();
