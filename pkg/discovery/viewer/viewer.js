// The API documentation viewer: it reads openapi.json from this service and renders every
// operation (method, path, summary, parameters, request and response schemas, examples) with a
// form to try it. It loads nothing from anywhere else and sends nothing anywhere but this API
// (the page's Content-Security-Policy enforces both). Everything is built with DOM calls and
// textContent, never by parsing strings as HTML.
"use strict";

(function () {
  var METHODS = ["get", "post", "put", "patch", "delete", "head", "options"];
  var doc = null;

  function el(tag, attrs, children) {
    var e = document.createElement(tag);
    if (attrs) {
      Object.keys(attrs).forEach(function (k) {
        if (k === "text") e.textContent = attrs[k];
        else if (k === "class") e.className = attrs[k];
        else e.setAttribute(k, attrs[k]);
      });
    }
    (children || []).forEach(function (c) {
      if (c === null || c === undefined) return;
      e.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
    });
    return e;
  }

  // inline renders the small markdown subset the document's descriptions use: `code`, **bold**.
  function inline(text) {
    var frag = document.createDocumentFragment();
    var re = /(`[^`]+`|\*\*[^*]+\*\*)/g, last = 0, m;
    while ((m = re.exec(text)) !== null) {
      if (m.index > last) frag.appendChild(document.createTextNode(text.slice(last, m.index)));
      var t = m[0];
      frag.appendChild(t[0] === "`" ? el("code", { text: t.slice(1, -1) }) : el("strong", { text: t.slice(2, -2) }));
      last = m.index + t.length;
    }
    if (last < text.length) frag.appendChild(document.createTextNode(text.slice(last)));
    return frag;
  }

  // markdown renders paragraphs and "- " lists.
  function markdown(text) {
    var box = el("div", { class: "md" });
    (text || "").split(/\n\n+/).forEach(function (block) {
      var lines = block.split("\n");
      if (lines.every(function (l) { return /^- /.test(l) || l === ""; })) {
        var ul = el("ul");
        lines.forEach(function (l) { if (l) { var li = el("li"); li.appendChild(inline(l.slice(2))); ul.appendChild(li); } });
        box.appendChild(ul);
      } else {
        var p = el("p");
        p.appendChild(inline(block));
        box.appendChild(p);
      }
    });
    return box;
  }

  function resolve(ref) {
    var parts = ref.replace(/^#\//, "").split("/"), node = doc;
    parts.forEach(function (p) { node = node ? node[p.replace(/~1/g, "/").replace(/~0/g, "~")] : undefined; });
    return node;
  }

  function deref(x) {
    var seen = 0;
    while (x && x.$ref && seen++ < 10) x = resolve(x.$ref);
    return x || {};
  }

  function typeLabel(s) {
    if (s.$ref) return s.$ref.split("/").pop();
    var t = s.type;
    if (Array.isArray(t)) t = t.join(" | ");
    if (!t && s.enum) t = "enum";
    if (!t && s.const !== undefined) t = "const";
    if (!t && (s.anyOf || s.oneOf)) t = s.anyOf ? "anyOf" : "oneOf";
    if (!t) t = "any";
    if (t === "array" && s.items) t = "array of " + typeLabel(s.items);
    return t;
  }

  function constraints(s) {
    var out = [];
    if (s.enum) out.push("one of " + s.enum.map(function (v) { return JSON.stringify(v); }).join(", "));
    if (s.const !== undefined) out.push("always " + JSON.stringify(s.const));
    ["minLength", "maxLength", "minimum", "maximum", "minItems", "maxItems", "minProperties", "maxProperties", "pattern", "format"].forEach(function (k) {
      if (s[k] !== undefined) out.push(k + " " + s[k]);
    });
    if (s.default !== undefined) out.push("default " + JSON.stringify(s.default));
    if (s.additionalProperties === false) out.push("no other properties");
    return out.join("; ");
  }

  // nestedSchema is what a property's entry expands to: its own properties, its items' or the
  // schema of its additional properties; null for a leaf.
  function nestedSchema(p) {
    if (p.properties) return p;
    if (p.items && (p.items.properties || p.items.$ref)) return p.items;
    if (p.additionalProperties && typeof p.additionalProperties === "object") return p.additionalProperties;
    return null;
  }

  // schemaTree renders a schema as nested lists: properties with their types, whether they are
  // required, constraints and descriptions. References link to the schema's own section.
  function schemaTree(s, depth) {
    depth = depth || 0;
    var ul = el("ul", { class: "schema" });
    if (!s || typeof s !== "object") return ul;
    if (s.$ref) {
      var name = s.$ref.split("/").pop();
      ul.appendChild(el("li", null, ["Schema ", el("a", { href: "#schema-" + name, text: name }), depth === 0 ? ":" : "."]));
      if (depth === 0) ul.appendChild(el("li", null, [schemaTree(deref(s), 1)]));
      return ul;
    }
    if (s.description && depth === 0) ul.appendChild(el("li", { class: "desc" }, [inline(s.description)]));
    var c = constraints(s);
    if (c && depth === 0) ul.appendChild(el("li", { class: "desc", text: c }));
    var req = s.required || [];
    Object.keys(s.properties || {}).forEach(function (k) {
      var p = s.properties[k];
      var li = el("li", null, [el("span", { class: "pname", text: k }),
        req.indexOf(k) >= 0 ? el("span", { class: "req", text: "required" }) : null,
        el("span", { class: "type", text: typeLabel(p) })]);
      var pc = constraints(p);
      if (p.description || pc) {
        var d = el("div", { class: "desc" });
        if (p.description) d.appendChild(inline(p.description));
        if (pc) d.appendChild(document.createTextNode((p.description ? " " : "") + "(" + pc + ")"));
        li.appendChild(d);
      }
      var nested = nestedSchema(p);
      if (p.$ref) li.appendChild(el("div", null, ["See ", el("a", { href: "#schema-" + p.$ref.split("/").pop(), text: p.$ref.split("/").pop() })]));
      else if (nested && depth < 6) li.appendChild(schemaTree(nested, depth + 1));
      ul.appendChild(li);
    });
    if (!s.properties && s.items && depth < 6) {
      ul.appendChild(el("li", null, [el("span", { class: "pname", text: "items" }), el("span", { class: "type", text: typeLabel(s.items) })]));
      if (s.items.properties || s.items.$ref) ul.appendChild(schemaTree(s.items, depth + 1));
    }
    if (typeof s.additionalProperties === "object" && depth < 6 && !s.properties) {
      ul.appendChild(el("li", null, [el("span", { class: "pname", text: "{any name}" }), el("span", { class: "type", text: typeLabel(s.additionalProperties) })]));
      if (s.additionalProperties.properties) ul.appendChild(schemaTree(s.additionalProperties, depth + 1));
    }
    ["anyOf", "oneOf", "allOf"].forEach(function (k) {
      (s[k] || []).forEach(function (sub, i) {
        ul.appendChild(el("li", null, [el("span", { class: "pname", text: k + " " + (i + 1) }), el("span", { class: "type", text: typeLabel(sub) })]));
        if (depth < 6) ul.appendChild(schemaTree(sub, depth + 1));
      });
    });
    if (!ul.childNodes.length) ul.appendChild(el("li", null, [el("span", { class: "type", text: typeLabel(s) })]));
    return ul;
  }

  function pretty(v) {
    try { return JSON.stringify(v, null, 2); } catch (e) { return String(v); }
  }

  function examplesOf(mt) {
    var out = [];
    if (mt.example !== undefined) out.push({ name: "example", value: mt.example });
    Object.keys(mt.examples || {}).forEach(function (k) {
      var ex = deref(mt.examples[k]);
      out.push({ name: ex.summary || k, value: ex.value });
    });
    return out;
  }

  function contentBlock(content) {
    var box = el("div");
    Object.keys(content || {}).forEach(function (type) {
      var mt = content[type] || {};
      box.appendChild(el("h4", null, [el("code", { text: type }), " ", el("span", { class: "type", text: typeLabel(mt.schema || {}) })]));
      box.appendChild(schemaTree(mt.schema, 0));
      examplesOf(mt).forEach(function (ex) {
        box.appendChild(el("details", null, [el("summary", { text: "Example: " + ex.name }), el("pre", { text: pretty(ex.value) })]));
      });
    });
    return box;
  }

  function parametersOf(pathItem, op) {
    var list = (pathItem.parameters || []).concat(op.parameters || []);
    return list.map(deref);
  }

  function parametersTable(params) {
    var t = el("table", null, [el("tr", null, [el("th", { text: "Name" }), el("th", { text: "In" }), el("th", { text: "Type" }), el("th", { text: "Description" })])]);
    params.forEach(function (p) {
      var s = p.schema || {};
      var c = constraints(s);
      t.appendChild(el("tr", null, [
        el("td", null, [el("span", { class: "pname", text: p.name }), p.required ? el("span", { class: "req", text: "required" }) : null]),
        el("td", { text: p.in }),
        el("td", null, [el("span", { class: "type", text: typeLabel(s) })]),
        el("td", null, [inline(p.description || ""), c ? " (" + c + ")" : null])
      ]));
    });
    return t;
  }

  function responsesBlock(responses) {
    var box = el("div");
    Object.keys(responses || {}).forEach(function (code) {
      var r = deref(responses[code]);
      var d = el("details", null, [el("summary", null, [
        el("span", { class: "status s" + code[0], text: code }), " ", inline(r.description || "")])]);
      var headers = Object.keys(r.headers || {});
      if (headers.length) {
        var t = el("table", null, [el("tr", null, [el("th", { text: "Header" }), el("th", { text: "Type" }), el("th", { text: "Description" })])]);
        headers.forEach(function (h) {
          var hd = deref(r.headers[h]);
          t.appendChild(el("tr", null, [el("td", null, [el("span", { class: "pname", text: h }), hd.required ? el("span", { class: "req", text: "always" }) : null]),
            el("td", null, [el("span", { class: "type", text: typeLabel(hd.schema || {}) })]), el("td", null, [inline(hd.description || "")])]));
        });
        d.appendChild(t);
      }
      if (r.content) d.appendChild(contentBlock(r.content));
      box.appendChild(d);
    });
    return box;
  }

  // tryForm sends the request to this service (relative URL: same origin) and shows the answer.
  function tryForm(method, path, params, op) {
    var form = el("form", { class: "try", "data-operation": op.operationId });
    form.appendChild(el("h4", { text: "Try it" }));
    var inputs = [];
    params.forEach(function (p) {
      var id = "try-" + op.operationId + "-" + p.in + "-" + p.name;
      var input = el("input", { id: id, name: p.name, placeholder: p.in + (p.required ? ", required" : ", optional") });
      if (p.example !== undefined) input.value = String(p.example);
      form.appendChild(el("label", { for: id, text: p.name + " (" + p.in + ")" }));
      form.appendChild(input);
      inputs.push({ p: p, input: input });
    });
    var body = null;
    var rb = deref(op.requestBody);
    if (rb && rb.content) {
      var type = Object.keys(rb.content)[0];
      var exs = examplesOf(rb.content[type] || {});
      var bid = "try-" + op.operationId + "-body";
      body = el("textarea", { id: bid, spellcheck: "false" });
      body.value = exs.length ? pretty(exs[0].value) : "";
      form.appendChild(el("label", { for: bid, text: "Body (" + type + ")" }));
      form.appendChild(body);
    }
    var button = el("button", { type: "submit", text: "Send " + method.toUpperCase() + " " + path });
    form.appendChild(button);
    var out = el("div", { class: "result" });
    form.appendChild(out);
    form.addEventListener("submit", function (ev) {
      ev.preventDefault();
      var url = path, query = [], headers = {};
      inputs.forEach(function (x) {
        var v = x.input.value;
        if (x.p.in === "path") url = url.replace("{" + x.p.name + "}", encodeURIComponent(v));
        else if (v !== "" && x.p.in === "query") query.push(encodeURIComponent(x.p.name) + "=" + encodeURIComponent(v));
        else if (v !== "" && x.p.in === "header") headers[x.p.name] = v;
      });
      if (query.length) url += "?" + query.join("&");
      var init = { method: method.toUpperCase(), headers: headers };
      if (body) { init.body = body.value; headers["Content-Type"] = "application/json"; }
      out.textContent = "Sending…";
      fetch(new URL("." + url, location.href).toString(), init).then(function (resp) {
        return resp.text().then(function (text) {
          out.textContent = "";
          var shown = [];
          resp.headers.forEach(function (v, k) { shown.push(k + ": " + v); });
          var shownBody = text;
          try { shownBody = JSON.stringify(JSON.parse(text), null, 2); } catch (e) { /* not JSON */ }
          out.appendChild(el("div", null, [el("span", { class: "status s" + String(resp.status)[0], text: String(resp.status) }), " " + resp.statusText]));
          out.appendChild(el("pre", { text: shown.join("\n") }));
          out.appendChild(el("pre", { text: shownBody }));
        });
      }).catch(function (e) {
        out.textContent = "";
        out.appendChild(el("p", { class: "error", text: "The request failed: " + e }));
      });
    });
    return form;
  }

  function render() {
    var info = doc.info || {};
    document.getElementById("title").textContent = info.title || "API";
    var sub = document.getElementById("subtitle");
    sub.textContent = "Version " + info.version + " · OpenAPI " + doc.openapi + " · ";
    sub.appendChild(el("a", { href: "openapi.json", text: "openapi.json" }));
    sub.appendChild(document.createTextNode(" · "));
    sub.appendChild(el("a", { href: "llms.txt", text: "llms.txt" }));
    var main = document.getElementById("main"), nav = document.getElementById("nav");
    main.textContent = "";
    var intro = el("section", { id: "overview" }, [el("h2", { text: info.summary || "" })]);
    intro.appendChild(markdown(info.description || ""));
    main.appendChild(intro);

    var byTag = {}, tags = (doc.tags || []).map(function (t) { return t.name; }), count = 0;
    Object.keys(doc.paths || {}).forEach(function (path) {
      var item = doc.paths[path];
      METHODS.forEach(function (m) {
        var op = item[m];
        if (!op) return;
        count++;
        var tag = (op.tags || ["other"])[0];
        if (tags.indexOf(tag) < 0) tags.push(tag);
        (byTag[tag] = byTag[tag] || []).push({ path: path, method: m, op: op, item: item });
      });
    });
    tags.forEach(function (tag) {
      var ops = byTag[tag] || [];
      if (!ops.length) return;
      var navList = el("ul");
      nav.appendChild(el("h2", { text: tag }));
      nav.appendChild(navList);
      ops.forEach(function (x) {
        var id = x.op.operationId;
        navList.appendChild(el("li", null, [el("a", { href: "#" + id }, [el("span", { class: "method " + x.method, text: x.method }), x.path])]));
        var s = el("section", { class: "op", id: id, "data-method": x.method, "data-path": x.path }, [
          el("h2", null, [el("span", { class: "method " + x.method, text: x.method }), el("code", { text: x.path }), el("span", { class: "opid", text: id })])]);
        s.appendChild(el("p", null, [el("strong", null, [inline(x.op.summary || "")])]));
        s.appendChild(markdown(x.op.description || ""));
        var params = parametersOf(x.item, x.op);
        if (params.length) { s.appendChild(el("h3", { text: "Parameters" })); s.appendChild(parametersTable(params)); }
        var rb = deref(x.op.requestBody);
        if (rb && rb.content) { s.appendChild(el("h3", { text: "Request body" + (rb.required ? " (required)" : "") })); s.appendChild(contentBlock(rb.content)); }
        s.appendChild(el("h3", { text: "Responses" }));
        s.appendChild(responsesBlock(x.op.responses));
        s.appendChild(tryForm(x.method, x.path, params, x.op));
        main.appendChild(s);
      });
    });

    var codes = doc["x-error-codes"] || [];
    if (codes.length) {
      var es = el("section", { id: "error-codes" }, [el("h2", { text: "Error codes" })]);
      var t = el("table", null, [el("tr", null, [el("th", { text: "Code" }), el("th", { text: "Status" }), el("th", { text: "Retryable" }), el("th", { text: "Meaning" })])]);
      codes.forEach(function (c) {
        t.appendChild(el("tr", { id: "error-" + c.code }, [el("td", null, [el("code", { text: c.code })]), el("td", { text: String(c.status) }),
          el("td", { text: c.retryable ? "yes" : "no" }), el("td", null, [inline(c.meaning || "")])]));
      });
      es.appendChild(t);
      main.appendChild(es);
      nav.appendChild(el("h2", { text: "reference" }));
      nav.appendChild(el("ul", null, [el("li", null, [el("a", { href: "#error-codes", text: "Error codes" })]), el("li", null, [el("a", { href: "#schemas", text: "Schemas" })])]));
    }

    var schemas = (doc.components || {}).schemas || {};
    var ss = el("section", { id: "schemas" }, [el("h2", { text: "Schemas" })]);
    Object.keys(schemas).forEach(function (name) {
      ss.appendChild(el("div", { id: "schema-" + name }, [el("h3", { text: name }), schemaTree(schemas[name], 0)]));
    });
    main.appendChild(ss);

    document.body.setAttribute("data-operations", String(count));
    if (location.hash) {
      var target = document.getElementById(location.hash.slice(1));
      if (target) target.scrollIntoView();
    }
  }

  fetch(new URL("openapi.json", location.href).toString(), { headers: { Accept: "application/json" } })
    .then(function (r) { if (!r.ok) throw new Error("HTTP " + r.status); return r.json(); })
    .then(function (d) { doc = d; render(); })
    .catch(function (e) {
      document.getElementById("subtitle").textContent = "";
      document.getElementById("main").appendChild(el("p", { class: "error", text: "The OpenAPI document could not be loaded: " + e.message }));
      document.body.setAttribute("data-error", "load");
    });
})();
