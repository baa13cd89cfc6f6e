/* hostd's view runtime inside a chat client (MCP Apps, io.modelcontextprotocol/ui, 2026-01-26):
   JSON-RPC over postMessage with the client's frame. The view learns the tool's input and result
   from the client and asks the client to call tools (tools/call) and read resources
   (resources/read): it reaches nothing else. */
(function () {
  "use strict";
  var config = JSON.parse(document.getElementById("hostd-config").textContent);
  var nextId = 1;
  var pending = {};
  var handlers = { input: [], result: [], context: [] };
  var state = { language: config.language, context: {}, input: null, result: null };
  var data = null;

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
    else if (message.method === "ui/notifications/tool-result") {
      state.result = params;
      // the tool refused (an error envelope): every view shows the refusal, not its own drawing
      var answer = envelopeOf(params);
      if (params.isError || (answer && answer.status === "error")) {
        view.root.textContent = "";
        view.showError(refusal(answer || {}));
      } else emit("result", params);
    }
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
    /* resources/read through the client (the server serves a resource where the tool it follows
       is served to this member); resolves with its first text, rejects with {message, hint, code}. */
    readResource: function (uri) {
      return request("resources/read", { uri: uri }).then(function (result) {
        var first = result && result.contents && result.contents[0];
        return first && typeof first.text === "string" ? first.text : "";
      }, function (error) { throw refusal(error); });
    },
    /* The view's own data (its template's #view-data) and its words in the reader's language. */
    get data() {
      if (!data) data = JSON.parse(document.getElementById("view-data").textContent);
      return data;
    },
    word: function (key) { return view.text(view.data.words, key); },
    /* Where the view draws (#<name>) and says what it is doing (#<name>-status); both from the shell. */
    get root() { return document.getElementById(config.root); },
    get status() { return document.getElementById(config.root + "-status"); },
    busy: function () { view.status.textContent = config.working[state.language] || config.working.en; },
    done: function (message) {
      view.status.textContent = "";
      if (message) view.status.appendChild(view.el("p", { class: "notice", role: "status", text: message }));
    },
    /* A refusal as the dashboard shows one: its message, its hint, its code. */
    showError: function (element, error) {
      if (error === undefined) { error = element; element = view.status; }
      element.textContent = "";
      element.appendChild(view.el("div", { class: "error", role: "alert" }, [
        view.el("p", { text: error.message }),
        error.hint ? view.el("p", { class: "hint", text: error.hint }) : null,
        error.code ? view.el("p", { class: "code" }, [view.el("code", { text: error.code })]) : null
      ]));
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

  /* The dashboard's markup, drawn once: apps.py renders the dashboard's macros as <template
     data-piece="name" data-lang="en|zh"> with ⟦path|filter⟧ where a record's field goes and
     nested <template data-if|data-each> around conditional and repeated parts. view.piece(name,
     record, options) clones one in the reader's language and fills it: every value goes in as
     text (a text node's data or an attribute's value), never as markup; links only within the
     view (#...). options.tests names the tests of parts whose condition is not a field;
     options.formats the filters besides when, length, join, default and markdown. */
  var MARK = /\u27e6([^\u27e7]*)\u27e7/g;
  var WHOLE_MARKDOWN = /^\s*\u27e6([^\u27e7|]*)\|markdown\u27e7\s*$/;
  function present(value) {
    return !(value === null || value === undefined || value === "" || value === false || value === 0 ||
      (Array.isArray(value) && !value.length));
  }
  function lookup(scope, path) {
    var cut = path.lastIndexOf("[]");
    var value = cut < 0 ? scope[""] : scope[path.slice(0, cut + 2)];
    var rest = cut < 0 ? path : path.slice(cut + 3);
    if (rest) rest.split(".").forEach(function (key) { value = value === null || value === undefined ? undefined : value[key]; });
    return value;
  }
  function shown(scope, spec, formats) {
    var pipes = spec.split("|");
    var value = lookup(scope, pipes[0]);
    pipes.slice(1).forEach(function (pipe) {
      var colon = pipe.indexOf(":");
      var name = colon < 0 ? pipe : pipe.slice(0, colon), argument = colon < 0 ? "" : pipe.slice(colon + 1);
      if (name === "when") value = view.when(value);
      else if (name === "length") value = value ? value.length : 0;
      else if (name === "join") value = (value || []).join(argument);
      else if (name === "default") value = present(value) ? value : argument;
      else if (name === "flag") value = present(value) ? argument : "";
      else if (formats[name]) value = formats[name](value);
    });
    if (Array.isArray(value)) value = value.join(", ");
    return value === null || value === undefined ? "" : String(value);
  }
  function fill(node, scope, options) {
    var child = node.firstChild;
    while (child) {
      var next = child.nextSibling;
      if (child.nodeType === 1 && child.tagName === "TEMPLATE") {
        var out = document.createDocumentFragment();
        var test = child.getAttribute("data-if"), each = child.getAttribute("data-each");
        if (test !== null) {
          var negated = test.charAt(0) === "!", name = negated ? test.slice(1) : test;
          var holds = options.tests[name] ? options.tests[name](scope[""]) : present(lookup(scope, name));
          if (negated) holds = !holds;
          if (holds) { out = child.content.cloneNode(true); fill(out, scope, options); }
        } else if (each !== null) {
          (lookup(scope, each) || []).forEach(function (item) {
            var inner = Object.create(scope);
            inner[each + "[]"] = item;
            var copy = child.content.cloneNode(true);
            fill(copy, inner, options);
            out.appendChild(copy);
          });
        }
        node.replaceChild(out, child);
      } else if (child.nodeType === 1) {
        Array.prototype.slice.call(child.attributes).forEach(function (attribute) {
          if (attribute.value.indexOf("\u27e6") < 0) return;
          var value = attribute.value.replace(MARK, function (m, spec) { return shown(scope, spec, options.formats); });
          var name = attribute.name.toLowerCase();
          if (name.indexOf("on") === 0 || ((name === "href" || name === "src" || name === "action") && value.charAt(0) !== "#")) child.removeAttribute(attribute.name);
          else child.setAttribute(attribute.name, value);
        });
        fill(child, scope, options);
      } else if (child.nodeType === 3 && child.nodeValue.indexOf("\u27e6") >= 0) {
        var whole = WHOLE_MARKDOWN.exec(child.nodeValue);
        if (whole) {
          var drawn = view.markdown(lookup(scope, whole[1]));
          var parts = document.createDocumentFragment();
          while (drawn.firstChild) parts.appendChild(drawn.firstChild);
          node.replaceChild(parts, child);
        } else child.nodeValue = child.nodeValue.replace(MARK, function (m, spec) { return shown(scope, spec, options.formats); });
      }
      child = next;
    }
  }
  view.piece = function (name, record, options) {
    var template = document.querySelector('template[data-piece="' + name + '"][data-lang="' + state.language + '"]') ||
      document.querySelector('template[data-piece="' + name + '"]');
    var copy = template.content.cloneNode(true);
    fill(copy, { "": record }, { tests: (options && options.tests) || {}, formats: (options && options.formats) || {} });
    return copy.firstElementChild;
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
