/* hostd's view runtime inside a chat client (MCP Apps, io.modelcontextprotocol/ui, 2026-01-26):
   JSON-RPC over postMessage with the client's frame. The view learns the tool's input and result
   from the client and asks the client to call tools (tools/call): it reaches nothing else. */
(function () {
  "use strict";
  var config = JSON.parse(document.getElementById("hostd-config").textContent);
  var nextId = 1;
  var pending = {};
  var handlers = { input: [], result: [], context: [] };
  var state = { language: config.language, context: {}, input: null, result: null };

  function send(message) { window.parent.postMessage(message, "*"); }
  function request(method, params) {
    var id = nextId++;
    return new Promise(function (resolve, reject) {
      pending[id] = { resolve: resolve, reject: reject };
      send({ jsonrpc: "2.0", id: id, method: method, params: params });
    });
  }
  function notify(method, params) { send({ jsonrpc: "2.0", method: method, params: params || {} }); }
  function emit(kind, value) { handlers[kind].forEach(function (f) { f(value); }); }

  function applyContext(context) {
    if (!context) return;
    for (var key in context) state.context[key] = context[key];
    var locale = String(state.context.locale || "").toLowerCase();
    if (locale.indexOf("zh") === 0) state.language = "zh";
    else if (locale) state.language = "en";
    document.documentElement.lang = state.language === "zh" ? "zh-CN" : "en";
    document.documentElement.dataset.theme = state.context.theme === "dark" ? "dark" : "light";
    emit("context", state.context);
  }

  window.addEventListener("message", function (event) {
    if (event.source !== window.parent) return;
    var message = event.data;
    if (!message || message.jsonrpc !== "2.0") return;
    if (message.method === undefined && message.id !== undefined) {
      var waiting = pending[message.id];
      delete pending[message.id];
      if (!waiting) return;
      if (message.error) waiting.reject(message.error);
      else waiting.resolve(message.result);
      return;
    }
    var params = message.params || {};
    if (message.method === "ui/notifications/tool-input") { state.input = params.arguments || {}; emit("input", state.input); }
    else if (message.method === "ui/notifications/tool-result") { state.result = params; emit("result", params); }
    else if (message.method === "ui/notifications/host-context-changed") applyContext(params);
    if (message.id !== undefined && message.method !== undefined) {
      // ping, ui/resource-teardown: nothing to keep, answer at once
      send({ jsonrpc: "2.0", id: message.id, result: {} });
    }
  });

  function envelopeOf(result) {
    if (result && result.structuredContent) return result.structuredContent;
    var first = result && result.content && result.content[0];
    try { return JSON.parse(first.text); } catch (e) { return null; }
  }

  /* The refusal as the dashboard shows it: message, then hint. */
  function refusal(error) {
    var shown = error && error.error ? error.error : error || {};
    return { message: shown.message || String(error), hint: shown.hint || "", code: shown.code || "" };
  }

  var view = {
    get language() { return state.language; },
    get context() { return state.context; },
    get input() { return state.input; },
    get result() { return state.result; },
    on: function (kind, handler) { handlers[kind].push(handler); },
    envelopeOf: envelopeOf,
    /* The served name of the plugin's tool, or null when this member may not call it. */
    tool: function (name) { return config.tools[name] || null; },
    can: function (name) { return Boolean(config.tools[name]); },
    text: function (table, key) { return (table[state.language] || table.en)[key] || key; },
    /* tools/call through the client; resolves with the envelope, rejects with {message, hint, code}. */
    call: function (name, args) {
      var served = config.tools[name];
      if (!served) return Promise.reject({ message: name, hint: "", code: "PERMISSION_DENIED" });
      return request("tools/call", { name: served, arguments: args || {} }).then(function (result) {
        var envelope = envelopeOf(result);
        if (result.isError) throw refusal(envelope);
        return envelope;
      }, function (error) { throw refusal(error); });
    },
    showError: function (element, error) {
      element.textContent = "";
      var p = document.createElement("p");
      p.className = "error";
      p.setAttribute("role", "alert");
      p.textContent = error.message + (error.hint ? " " + error.hint : "");
      element.appendChild(p);
    },
    el: function (tag, attributes, children) {
      var node = document.createElement(tag);
      for (var key in attributes || {}) {
        if (key === "text") node.textContent = attributes[key];
        else if (key === "class") node.className = attributes[key];
        else if (key.indexOf("on") === 0) node.addEventListener(key.slice(2), attributes[key]);
        else node.setAttribute(key, attributes[key]);
      }
      (children || []).forEach(function (child) {
        if (child !== null && child !== undefined) node.appendChild(typeof child === "string" ? document.createTextNode(child) : child);
      });
      return node;
    },
    when: function (iso) {
      if (!iso) return "";
      var stamp = new Date(iso);
      if (isNaN(stamp.getTime())) return String(iso);
      return stamp.toISOString().slice(0, 16).replace("T", " ") + " UTC";
    }
  };
  /* Markdown as DOM, raw HTML off: every piece of stored text becomes a text node; links only to
     http(s), opened through the client (ui/open-link); no images. Headings two levels down, as
     the dashboard's renderer does. */
  function inline(text, parent) {
    var pattern = /(`[^`]+`)|(\*\*[^*]+\*\*)|(\*[^*\s][^*]*\*)|(\[[^\]]+\]\([^)\s]+\))/g;
    var at = 0, match;
    while ((match = pattern.exec(text)) !== null) {
      if (match.index > at) parent.appendChild(document.createTextNode(text.slice(at, match.index)));
      var piece = match[0];
      if (match[1]) parent.appendChild(view.el("code", { text: piece.slice(1, -1) }));
      else if (match[2]) parent.appendChild(view.el("strong", { text: piece.slice(2, -2) }));
      else if (match[3]) parent.appendChild(view.el("em", { text: piece.slice(1, -1) }));
      else {
        var label = piece.slice(1, piece.indexOf("]("));
        var target = piece.slice(piece.indexOf("](") + 2, -1);
        if (/^https?:\/\//i.test(target)) {
          parent.appendChild(view.el("a", { href: target, rel: "noopener noreferrer nofollow", text: label,
            onclick: function (event) { event.preventDefault(); request("ui/open-link", { url: event.currentTarget.getAttribute("href") }).catch(function () {}); } }));
        } else parent.appendChild(document.createTextNode(piece));
      }
      at = match.index + piece.length;
    }
    if (at < text.length) parent.appendChild(document.createTextNode(text.slice(at)));
    return parent;
  }
  view.markdown = function (source) {
    var root = view.el("div", { class: "markdown" });
    var lines = String(source || "").replace(/\r\n?/g, "\n").split("\n");
    var i = 0, list = null, paragraph = null;
    function close() { list = null; paragraph = null; }
    while (i < lines.length) {
      var line = lines[i];
      var fence = /^(```|~~~)/.exec(line);
      if (fence) {
        close();
        var code = [];
        i++;
        while (i < lines.length && lines[i].indexOf(fence[1]) !== 0) code.push(lines[i++]);
        root.appendChild(view.el("pre", {}, [view.el("code", { text: code.join("\n") })]));
        i++;
        continue;
      }
      var heading = /^(#{1,6})\s+(.*)$/.exec(line);
      var item = /^\s*([-*+]|\d+[.)])\s+(.*)$/.exec(line);
      if (!line.trim()) close();
      else if (heading) { close(); root.appendChild(inline(heading[2], view.el("h" + Math.min(6, heading[1].length + 2)))); }
      else if (item) {
        var ordered = /\d/.test(item[1]);
        if (!list || list.tagName !== (ordered ? "OL" : "UL")) { paragraph = null; list = root.appendChild(view.el(ordered ? "ol" : "ul")); }
        list.appendChild(inline(item[2], view.el("li")));
      } else if (/^>\s?/.test(line)) { close(); root.appendChild(inline(line.replace(/^>\s?/, ""), view.el("blockquote"))); }
      else if (paragraph) { paragraph.appendChild(document.createTextNode(" ")); inline(line, paragraph); }
      else { list = null; paragraph = root.appendChild(inline(line, view.el("p"))); }
      i++;
    }
    return root;
  };

  window.hostd = { view: view };

  function start() {
    if (window.ResizeObserver) {
      new ResizeObserver(function () {
        notify("ui/notifications/size-changed", {
          width: Math.ceil(document.documentElement.scrollWidth),
          height: Math.ceil(document.documentElement.scrollHeight)
        });
      }).observe(document.body);
    }
    request("ui/initialize", {
      appInfo: { name: "hostd-" + config.plugin, version: "1" },
      appCapabilities: { availableDisplayModes: ["inline"] },
      protocolVersion: "2026-01-26"
    }).then(function (answer) {
      applyContext((answer && answer.hostContext) || {});
      notify("ui/notifications/initialized", {});
    }, function () { notify("ui/notifications/initialized", {}); });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
