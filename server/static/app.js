// ragpg page: asks and searches through the /v1 API. No framework, no external URL.
// The API key lives in sessionStorage (this tab only) and travels in the Authorization header.
"use strict";

const KEY_STORAGE = "ragpg.apiKey";
const CITATION = /\[File: ([^,\]]+?)(?:, Section: ([^\]]*))?\]/g;
const outlines = {}; // vault name -> {obsidian_vault, folders}

const $ = (id) => document.getElementById(id);

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") node.className = v;
    else if (k === "text") node.textContent = v;
    else node.setAttribute(k, v);
  }
  for (const c of children) node.append(c);
  return node;
}

// -- the API key and requests ------------------------------------------------------------------

function apiKey() { return sessionStorage.getItem(KEY_STORAGE) || ""; }

function showKeyState() {
  $("key-state").textContent = apiKey() ? "A key is set for this tab." : "No key set.";
}

class ApiError extends Error {
  constructor(status, code, message) { super(message); this.status = status; this.code = code; }
}

async function api(path, body) {
  const headers = { "Accept": "application/json" };
  const key = apiKey();
  if (key) headers["Authorization"] = "Bearer " + key;
  const init = { method: body === undefined ? "GET" : "POST", headers, credentials: "omit" };
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch (e) {
    throw new ApiError(0, "network", "The server could not be reached.");
  }
  let data = null;
  try { data = await response.json(); } catch (e) { data = null; }
  if (!response.ok) {
    const err = (data && data.error) || {};
    throw new ApiError(response.status, err.code || "error", err.message || response.statusText);
  }
  return data;
}

function explainError(e) {
  if (e.status === 401 && !apiKey()) return "This server needs an API key: enter it above.";
  if (e.status === 401) return "The API key was not accepted (" + e.message + "). Enter a valid key above.";
  if (e.status === 403) return "This API key may not do that: " + e.message + ".";
  if (e.status === 404) return "Not found: " + e.message + ".";
  if (e.status === 429) return "The server is busy; try again in a moment.";
  if (e.status === 503) return "The database is not available right now: " + e.message;
  if (e.status === 400) return "The request was not accepted: " + e.message;
  return e.message || "Something went wrong.";
}

function showError(e) {
  const box = $("error");
  box.textContent = e ? explainError(e) : "";
  box.hidden = !e;
}

// -- vaults and folders ------------------------------------------------------------------------

async function loadVaults() {
  let data;
  try {
    data = await api("v1/vaults");
  } catch (e) {
    showError(e);
    return;
  }
  showError(null);
  const names = data.vaults.map((v) => v.name);
  for (const picker of document.querySelectorAll(".vault-picker")) {
    const keep = picker.value;
    picker.replaceChildren(el("option", { value: "", text: "All vaults" }));
    for (const v of data.vaults) {
      picker.append(el("option", { value: v.name, text: `${v.name} (${v.documents} notes)` }));
    }
    picker.value = names.includes(keep) ? keep : "";
  }
  await Promise.all(names.map(async (name) => {
    try { outlines[name] = await api(`v1/vaults/${encodeURIComponent(name)}/folders`); }
    catch (e) { outlines[name] = { obsidian_vault: null, folders: [] }; }
  }));
  for (const picker of document.querySelectorAll(".vault-picker")) fillFolders(picker);
}

function fillFolders(vaultPicker) {
  const folderPicker = $(vaultPicker.id.replace("vault", "folder"));
  const chosen = vaultPicker.value;
  folderPicker.replaceChildren(el("option", { value: "", text: "Every folder" }));
  const vaults = chosen ? [chosen] : Object.keys(outlines).sort();
  for (const v of vaults) {
    for (const f of (outlines[v] || { folders: [] }).folders) {
      if (!f.folder) continue; // the top level is covered by "Every folder"
      const label = chosen ? f.folder : `${v}/${f.folder}`;
      folderPicker.append(el("option", { value: `${v}/${f.folder}`, text: label }));
    }
  }
}

function scopeOf(prefix) {
  const vault = $(prefix + "-vault").value;
  const folder = $(prefix + "-folder").value;
  return { vaults: vault ? [vault] : [], folders: folder ? [folder] : [] };
}

// -- sources -------------------------------------------------------------------------------------

// `openAt` is the passage's `open_at` (the server's rag.places): `path#Heading`, `file.pdf#page=3`, so
// Obsidian opens the note at the passage's heading (the URI's `file` takes `Note%23Heading`).
function obsidianLink(vault, openAt) {
  const name = (outlines[vault] || {}).obsidian_vault;
  if (!name) return null;
  return `obsidian://open?vault=${encodeURIComponent(name)}&file=${encodeURIComponent(openAt)}`;
}

// The heading and location as the server words them (`Project Heron › Timeline`, `lines 3-9`, `p. 3`).
function where(passage) {
  const parts = [passage.heading, passage.location].filter((p) => p);
  return parts.length ? " — " + parts.join(", ") : "";
}

function sourceItem(found, snippet, id) {
  const { vault, source_path: path, ordinal } = found;
  const li = el("li", id ? { id } : {});
  const several = Object.keys(outlines).length > 1;
  const name = several ? `${vault}: ${path}` : path;
  const link = obsidianLink(vault, found.open_at || path);
  li.append(link ? el("a", { href: link, text: name, title: "Open this note in Obsidian" }) : el("strong", { text: name }));
  li.append(el("span", { class: "where", text: where(found) }));
  const show = el("button", { type: "button", class: "linklike", "aria-expanded": "false", text: "Show passage" });
  const passage = el("div", { class: "passage", hidden: "" });
  show.addEventListener("click", () => togglePassage(show, passage, vault, path, ordinal));
  li.append(show);
  if (snippet) li.append(el("p", { class: "snippet", text: snippet }));
  li.append(passage);
  return li;
}

async function togglePassage(button, box, vault, path, ordinal) {
  if (!box.hidden) {
    box.hidden = true;
    button.setAttribute("aria-expanded", "false");
    button.textContent = "Show passage";
    return;
  }
  if (!box.dataset.loaded) {
    const url = `v1/chunks/${encodeURIComponent(vault)}/${path.split("/").map(encodeURIComponent).join("/")}/${ordinal}`;
    try {
      const chunk = await api(url);
      box.textContent = chunk.text;  // as its reader sees it (links by their words), not the markup
      box.dataset.loaded = "1";
    } catch (e) {
      box.textContent = explainError(e);
    }
  }
  box.hidden = false;
  button.setAttribute("aria-expanded", "true");
  button.textContent = "Hide passage";
}

// -- ask -----------------------------------------------------------------------------------------

function citationIndex(refs, file, section) {
  let best = -1;
  refs.forEach((r, i) => {
    if (best >= 0 && refs[best].file === file && (!section || refs[best].heading_path.endsWith(section))) return;
    if (r.file === file || r.source_path === file) {
      if (best < 0 || (section && r.heading_path.endsWith(section))) best = i;
    }
  });
  return best;
}

function renderAnswerText(text, refs) {
  const box = $("answer-text");
  box.replaceChildren();
  for (const para of text.split(/\n{2,}/)) {
    const p = el("p");
    let last = 0;
    for (const m of para.matchAll(CITATION)) {
      p.append(para.slice(last, m.index));
      const i = citationIndex(refs, m[1].trim(), (m[2] || "").trim());
      if (i >= 0) {
        p.append(el("a", { class: "cite", href: `#source-${i + 1}`, text: `[${i + 1}]`,
                           "aria-label": `source ${i + 1}: ${refs[i].source_path}` }));
      } else {
        p.append(m[0]);
      }
      last = m.index + m[0].length;
    }
    p.append(para.slice(last));
    box.append(p);
  }
}

function renderExplanation(lines) {
  const list = $("why-lines");
  list.replaceChildren();
  let sub = null;
  for (const line of lines || []) {
    if (line.startsWith(" ") && list.lastElementChild) {
      if (!sub) { sub = el("ol"); list.lastElementChild.append(sub); }
      sub.append(el("li", { text: line.trim().replace(/^\d+\.\s*/, "") }));
    } else {
      sub = null;
      list.append(el("li", { text: line }));
    }
  }
  $("why").hidden = !(lines && lines.length);
}

function renderAnswer(data) {
  const article = $("answer");
  article.classList.toggle("abstained", !!data.abstained);
  const notice = data.abstained ? "Not found in your notes."
    : data.confidence === "low" ? "Your notes match this question only loosely, so check the sources below."
    : data.notice || "";
  $("answer-notice").textContent = data.abstained && data.notice ? `${notice} ${data.notice}` : notice;
  $("answer-notice").hidden = !$("answer-notice").textContent;
  renderAnswerText(data.answer, data.references);
  const sources = $("sources");
  sources.replaceChildren();
  data.references.forEach((r, i) => sources.append(sourceItem(r, "", `source-${i + 1}`)));
  $("sources-heading").hidden = data.references.length === 0;
  $("why").open = false;
  renderExplanation(data.explanation);
  article.hidden = false;
}

async function onAsk(event) {
  event.preventDefault();
  const question = $("question").value.trim();
  if (!question) return;
  const button = $("ask-button");
  button.disabled = true;
  $("ask-status").textContent = "Looking through your notes…";
  try {
    const data = await api("v1/ask", { query: question, ...scopeOf("ask"), detail: $("ask-detail").value, explain: true });
    showError(null);
    renderAnswer(data);
    $("ask-status").textContent = data.abstained ? "No answer found." : "Answer ready.";
  } catch (e) {
    $("answer").hidden = true;
    $("ask-status").textContent = "";
    showError(e);
  } finally {
    button.disabled = false;
  }
}

// -- search --------------------------------------------------------------------------------------

async function onSearch(event) {
  event.preventDefault();
  const query = $("search-query").value.trim();
  if (!query) return;
  const { vaults, folders } = scopeOf("search");
  const k = Math.max(1, Math.min(100, parseInt($("search-k").value, 10) || 10));
  const body = { query, k };
  if (vaults.length) body.vaults = vaults;
  if (folders.length) body.folders = folders;
  $("search-status").textContent = "Searching…";
  const list = $("results");
  try {
    const data = await api("v1/search", body);
    showError(null);
    list.replaceChildren();
    for (const item of data.items) {
      list.append(sourceItem(item, item.snippet));
    }
    $("search-status").textContent = data.items.length
      ? `${data.items.length} passage${data.items.length === 1 ? "" : "s"} found.`
      : "Nothing in your notes matches this search.";
  } catch (e) {
    list.replaceChildren();
    $("search-status").textContent = "";
    showError(e);
  }
}

// -- tabs (arrow keys move between them, as the ARIA tabs pattern says) ---------------------------

function selectTab(tab) {
  for (const t of document.querySelectorAll("[role=tab]")) {
    const on = t === tab;
    t.setAttribute("aria-selected", String(on));
    t.tabIndex = on ? 0 : -1;
    $(t.getAttribute("aria-controls")).hidden = !on;
  }
  tab.focus();
}

function setUpTabs() {
  const tabs = [...document.querySelectorAll("[role=tab]")];
  tabs.forEach((tab, i) => {
    tab.addEventListener("click", () => selectTab(tab));
    tab.addEventListener("keydown", (e) => {
      if (e.key === "ArrowRight" || e.key === "ArrowLeft") {
        e.preventDefault();
        selectTab(tabs[(i + (e.key === "ArrowRight" ? 1 : tabs.length - 1)) % tabs.length]);
      }
    });
  });
}

// -- start ---------------------------------------------------------------------------------------

document.addEventListener("DOMContentLoaded", () => {
  $("api-key").value = apiKey();
  showKeyState();
  $("key-form").addEventListener("submit", (e) => {
    e.preventDefault();
    const key = $("api-key").value.trim();
    if (key) sessionStorage.setItem(KEY_STORAGE, key); else sessionStorage.removeItem(KEY_STORAGE);
    showKeyState();
    loadVaults();
  });
  $("forget-key").addEventListener("click", () => {
    sessionStorage.removeItem(KEY_STORAGE);
    $("api-key").value = "";
    showKeyState();
  });
  for (const picker of document.querySelectorAll(".vault-picker")) {
    picker.addEventListener("change", () => fillFolders(picker));
  }
  $("ask-form").addEventListener("submit", onAsk);
  $("search-form").addEventListener("submit", onSearch);
  $("question").addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); $("ask-form").requestSubmit(); }
  });
  setUpTabs();
  loadVaults();
});
