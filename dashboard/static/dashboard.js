// Draws every chart of the page with vega-embed (served by this app: no CDN).
(function () {
  "use strict";
  function draw() {
    var holders = document.querySelectorAll("div.vis[data-spec]");
    var pending = holders.length;
    document.body.dataset.charts = String(pending);
    if (!pending) { document.body.dataset.rendered = "0"; return; }
    var done = 0;
    holders.forEach(function (el) {
      var spec = JSON.parse(document.getElementById(el.dataset.spec).textContent);
      window.vegaEmbed(el, spec, { renderer: "svg", actions: false })
        .then(function () { el.dataset.rendered = "1"; })
        .catch(function (err) { el.dataset.rendered = "error"; el.textContent = "Chart failed: " + err; console.error(err); })
        .finally(function () { done += 1; if (done === pending) { document.body.dataset.rendered = String(done); } });
    });
  }
  if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", draw); } else { draw(); }
})();
