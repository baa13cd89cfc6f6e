// Draws every <pre class="mermaid"> of the page with the vendored Mermaid, strictly: labels are
// sanitised, click callbacks are off, and a diagram's own %%{init}%% cannot loosen it (secure
// keys). Templates escape label text with the mermaid_text filter (#code; entities), which
// Mermaid turns back into the characters as text.
(function () {
  "use strict";
  // A session diagram's own words are written in the server's language; a view inside a chat
  // follows the client's (documentElement.lang), so they are put in the page's words before
  // drawing. Only the places the session diagram writes them are touched (an edge label, a
  // thought's kind before its ':', a branch's subgraph title, a missing thought's placeholder):
  // thought text cannot reach these shapes ('"' and '|' in it are #codes). The dashboard draws
  // in the page's own language, so there this changes nothing.
  var WORDS = {
    revises: { en: "revises", zh: "修订" },
    revision: { en: "revision", zh: "修订" },
    branch: { en: "branch", zh: "分支" },
    missing: { en: "missing", zh: "缺失" }
  };
  function either(key) { return "(?:" + WORDS[key].en + "|" + WORDS[key].zh + ")"; }
  function reword(text, language) {
    function say(key) { return WORDS[key][language]; }
    return text
      .replace(new RegExp("(-\\.->\\|)" + either("revises") + "(\\|)", "g"), function (_, a, b) { return a + say("revises") + b; })
      .replace(new RegExp("^(\\s*t\\d+\\[\"\\d+ )" + either("revision") + "(?=[ :])", "gm"), function (_, a) { return a + say("revision"); })
      .replace(new RegExp("^(\\s*subgraph b\\d+\\[\")" + either("branch") + " ", "gm"), function (_, a) { return a + say("branch") + " "; })
      .replace(new RegExp(" \\(" + either("missing") + "\\)(\"\\]\\):::dangling)$", "gm"), function (_, a) { return " (" + say("missing") + ")" + a; });
  }
  function draw(within) {
    if (!window.mermaid) { return; }
    window.mermaid.initialize({
      startOnLoad: false,
      securityLevel: "strict",
      secure: ["secure", "securityLevel", "startOnLoad", "maxTextSize", "htmlLabels"],
      theme: document.documentElement.dataset.theme === "dark" ? "dark" : "neutral"
    });
    var language = String(document.documentElement.lang || "").toLowerCase().indexOf("zh") === 0 ? "zh" : "en";
    var nodes = (within && within.querySelectorAll) ? within.querySelectorAll("pre.mermaid") : document.querySelectorAll("pre.mermaid");
    Array.prototype.forEach.call(nodes, function (node) {
      if (!node.getAttribute("data-processed")) node.textContent = reword(node.textContent, language);
    });
    return window.mermaid.run({ nodes: nodes });
  }
  // Views inside the chat draw a diagram once its text has come (not at load).
  window.hostdDraw = draw;
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", draw);
  } else {
    draw();
  }
})();
