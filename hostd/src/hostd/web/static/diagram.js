// Draws every <pre class="mermaid"> of the page with the vendored Mermaid, strictly: labels are
// sanitised, click callbacks are off, and a diagram's own %%{init}%% cannot loosen it (secure
// keys). Templates escape label text with the mermaid_text filter (#code; entities), which
// Mermaid turns back into the characters as text.
(function () {
  "use strict";
  function draw(within) {
    if (!window.mermaid) { return; }
    window.mermaid.initialize({
      startOnLoad: false,
      securityLevel: "strict",
      secure: ["secure", "securityLevel", "startOnLoad", "maxTextSize", "htmlLabels"],
      theme: document.documentElement.dataset.theme === "dark" ? "dark" : "neutral"
    });
    var nodes = (within && within.querySelectorAll) ? within.querySelectorAll("pre.mermaid") : null;
    return nodes ? window.mermaid.run({ nodes: nodes }) : window.mermaid.run({ querySelector: "pre.mermaid" });
  }
  // Views inside the chat draw a diagram once its text has come (not at load).
  window.hostdDraw = draw;
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", draw);
  } else {
    draw();
  }
})();
