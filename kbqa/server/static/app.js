// The kbqa page: posts the question to /v1/ask and shows the Result (no framework, no network beyond this server).
// Text from the server is always inserted as text nodes, never as HTML.
"use strict";

const PREFIXES = {
  "http://www.wikidata.org/entity/": "wd:", "http://www.wikidata.org/prop/direct/": "wdt:",
  "http://www.wikidata.org/prop/": "p:", "http://rdf.freebase.com/ns/": "ns:",
};

const $ = (id) => document.getElementById(id);

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") node.className = v; else node.setAttribute(k, v);
  }
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

function compact(iri) {
  for (const [ns, p] of Object.entries(PREFIXES)) if (iri && iri.startsWith(ns)) return p + iri.slice(ns.length);
  return iri;
}

function setStatus(text, failed) {
  $("status").textContent = text;
  $("status").className = failed ? "failed" : "";
}

function cell(v) {
  if (!v) return el("span", { class: "muted" }, "—");
  if (v.type === "uri") {
    return el("span", {}, v.label ? el("strong", {}, v.label) : null, " ",
      el("a", { href: v.value, class: "muted", target: "_blank", rel: "noopener" }, compact(v.value)));
  }
  return el("strong", {}, v.label || String(v.normalized ?? v.value));
}

function renderAnswers(ans, failed) {
  const box = $("answers");
  box.replaceChildren();
  if (!ans) { box.append(el("p", { class: "muted" }, failed ? "no answers" : "no answers (not run)")); return; }
  if (ans.kind === "ask") { box.append(el("p", {}, el("strong", {}, ans.boolean ? "yes" : "no"))); return; }
  if (!ans.rows.length) { box.append(el("p", { class: "muted" }, "no answer")); return; }
  const list = el("ul", { class: "answers", id: "answer-list" });
  for (const row of ans.rows) list.append(el("li", {}, row.map((v, i) => [i ? " · " : "", cell(v)])));
  box.append(list);
  if (ans.truncated) box.append(el("p", { class: "muted" }, "(cut at the row cap)"));
}

function fillTable(id, rows) {
  const body = $(id).querySelector("tbody");
  body.replaceChildren(...rows);
}

function renderResult(r) {
  $("result").hidden = false;
  renderAnswers(r.answers, Boolean(r.failed_stage));
  $("sparql").textContent = r.sparql || "(no query was written)";
  $("run-link").hidden = !r.sparql;
  if (r.sparql) $("run-link").href = "/sparql?format=json&query=" + encodeURIComponent(r.sparql);
  $("text").textContent = r.text || "";
  fillTable("constraints", (r.constraints || []).map((c) =>
    el("tr", {}, el("td", {}, c.id || c.leaf || ""), el("td", {}, c.text || ""),
      el("td", {}, el("code", {}, c.fragment || c.desq || "")))));
  fillTable("grounding", (r.grounding || []).map((g) => {
    const cands = el("div", {});
    for (const c of g.candidates || []) {
      cands.append(el("div", { class: "cand" }, `${Number(c.score).toFixed(3)}  ${compact(c.id)}  ${c.label || ""}`));
    }
    if (!(g.candidates || []).length) cands.append(el("span", { class: "muted" }, g.reason || "no candidate"));
    if (g.correction) cands.append(el("div", { class: "muted" }, `guess ${g.correction.action}: ${g.correction.reason}`));
    return el("tr", {}, el("td", {}, `[${g.name}]`), el("td", {}, `${g.kind} · ${g.label || ""}`),
      el("td", {}, g.chosen ? compact(g.chosen) : "—"), el("td", {}, cands));
  }));
  fillTable("steps", (r.steps || []).map((s) => {
    const errs = (s.errors || []).map((e) => el("div", { class: "bad" }, `[${e.stage}] ${e.ac ? e.ac + ": " : ""}${e.message}`));
    return el("tr", { class: s.ok ? "" : "fail", "data-stage": s.stage },
      el("td", {}, s.stage), el("td", { class: s.ok ? "ok" : "bad" }, s.ok ? "ok" : "FAIL"),
      el("td", {}, (s.seconds * 1000).toFixed(1)), el("td", {}, s.detail || "", errs));
  }));
  $("diagnosis").textContent = r.diagnosis ? "diagnosis: " + r.diagnosis.message : "";
  const n = r.answers && r.answers.rows ? r.answers.rows.length : 0;
  if (r.failed_stage) {
    const first = (r.errors || [])[0];
    setStatus(`failed at stage ${r.failed_stage}${first ? ": " + first.message : ""}`, true);
  } else {
    setStatus(`${r.status} · ${r.answers && r.answers.kind === "select" ? n + " answer(s) · " : ""}${r.seconds.toFixed(2)} s`, false);
  }
}

async function ask(event) {
  event.preventDefault();
  const body = { question: $("question").value, frontend: $("frontend").value, execute: $("execute").checked };
  setStatus("asking…", false);
  $("ask").disabled = true;
  try {
    const res = await fetch("/v1/ask", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
    const data = await res.json();
    if (data && data.status !== undefined) renderResult(data);
    else {
      $("result").hidden = true;
      const e = (data && data.error) || { stage: "server", message: `HTTP ${res.status}` };
      setStatus(`error (${res.status}) at stage ${e.stage}: ${e.message}`, true);
    }
  } catch (err) {
    setStatus(`error at stage server: ${err}`, true);
  } finally {
    $("ask").disabled = false;
  }
}

async function copySparql() {
  const text = $("sparql").textContent;
  try {
    await navigator.clipboard.writeText(text);
  } catch (_) {  // no clipboard API outside secure contexts: select the text and copy it the old way
    const range = document.createRange();
    range.selectNodeContents($("sparql"));
    const sel = window.getSelection();
    sel.removeAllRanges();
    sel.addRange(range);
    document.execCommand("copy");
  }
  $("copied").textContent = "copied";
  setTimeout(() => { $("copied").textContent = ""; }, 1500);
}

$("ask-form").addEventListener("submit", ask);
$("copy").addEventListener("click", copySparql);
