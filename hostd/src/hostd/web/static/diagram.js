// Draws every <pre class="mermaid"> of the page with the vendored Mermaid, strictly: no HTML in
// labels, no click callbacks, and a diagram's own %%{init}%% cannot loosen it (secure keys).
(function () {
  "use strict";
  function draw() {
    if (!window.mermaid) { return; }
    window.mermaid.initialize({
      startOnLoad: false,
      securityLevel: "strict",
      htmlLabels: false,
      flowchart: { htmlLabels: false },
      secure: ["secure", "securityLevel", "startOnLoad", "maxTextSize", "htmlLabels"],
      theme: "neutral"
    });
    window.mermaid.run({ querySelector: "pre.mermaid" });
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", draw);
  } else {
    draw();
  }
})();
