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
