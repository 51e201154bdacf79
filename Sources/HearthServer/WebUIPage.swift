/// The chat page `hearth serve` answers at `/` and `/chat` (``HearthServer/webUIRoutes(_:)``):
/// one self-contained HTML file — styles and script inline, no build step, no request to any
/// host but this server. Edit it here; it is served as written.
enum WebUIPage {
    /// The page.
    static let html = #"""
<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>Hearth chat</title>
<link rel="icon" href="data:,">
<style>
:root {
  --bg: #faf8f5; --panel: #ffffff; --side: #f1ede7; --text: #1f1c19; --muted: #6f675e; --line: #e2dcd3;
  --accent: #c8551b; --accent-text: #ffffff; --user: #fbe9dc; --code: #f4f1ec; --danger: #b42318;
  --radius: 12px; --mono: ui-monospace, SFMono-Regular, Menlo, Consolas, "Liberation Mono", monospace;
  --sans: system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans", "Liberation Sans", sans-serif;
}
@media (prefers-color-scheme: dark) {
  :root { --bg: #191714; --panel: #221f1b; --side: #15130f; --text: #ece6de; --muted: #a39a8f; --line: #37312a;
    --accent: #e8763a; --user: #3a2a1f; --code: #2b2722; --danger: #f97066; }
}
* { box-sizing: border-box; }
.sr { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); }
html, body { height: 100%; margin: 0; }
body { font: 15px/1.55 var(--sans); background: var(--bg); color: var(--text); display: flex; overflow: hidden; }
button, select, input, textarea { font: inherit; color: inherit; }
button { cursor: pointer; border: 1px solid var(--line); background: var(--panel); border-radius: 8px; padding: 6px 12px; }
button:hover { border-color: var(--accent); }
button:focus-visible, select:focus-visible, textarea:focus-visible, input:focus-visible { outline: 2px solid var(--accent); outline-offset: 1px; }
button.primary { background: var(--accent); color: var(--accent-text); border-color: var(--accent); }
button.danger { color: var(--danger); }
#side { width: 260px; flex: none; background: var(--side); border-right: 1px solid var(--line); display: flex; flex-direction: column; }
#side header { padding: 14px; display: flex; gap: 8px; align-items: center; }
#side h1 { font-size: 17px; margin: 0; flex: 1; letter-spacing: .2px; }
#side h1 span { color: var(--accent); }
#convs { list-style: none; margin: 0; padding: 0 8px; overflow-y: auto; flex: 1; }
#convs li { display: flex; align-items: center; border-radius: 8px; }
#convs li button.open { flex: 1; text-align: left; border: 0; background: none; padding: 8px 10px; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
#convs li.current { background: var(--panel); }
#convs li button.del { border: 0; background: none; color: var(--muted); padding: 4px 8px; visibility: hidden; }
#convs li:hover button.del, #convs li.current button.del { visibility: visible; }
#side footer { padding: 12px 14px; border-top: 1px solid var(--line); font-size: 13px; color: var(--muted); }
#side footer label { display: block; margin-bottom: 4px; }
#side footer input { width: 100%; padding: 6px 8px; border: 1px solid var(--line); border-radius: 8px; background: var(--panel); }
main { flex: 1; display: flex; flex-direction: column; min-width: 0; }
#top { display: flex; align-items: center; gap: 10px; padding: 10px 16px; border-bottom: 1px solid var(--line); background: var(--panel); }
#top select { padding: 6px 8px; border: 1px solid var(--line); border-radius: 8px; background: var(--panel); max-width: 50vw; }
#menu { display: none; }
#status { margin-left: auto; color: var(--muted); font-size: 13px; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
#log { flex: 1; overflow-y: auto; padding: 20px 16px 8px; }
.inner { max-width: 780px; margin: 0 auto; }
.empty { color: var(--muted); text-align: center; margin-top: 18vh; }
.empty h2 { color: var(--text); font-weight: 600; }
.msg { margin: 0 0 18px; display: flex; flex-direction: column; }
.msg .who { font-size: 12px; color: var(--muted); margin-bottom: 3px; text-transform: uppercase; letter-spacing: .6px; }
.msg.user { align-items: flex-end; }
.msg.user .content { background: var(--user); border-radius: var(--radius); padding: 8px 14px; white-space: pre-wrap; max-width: 85%; }
.msg.assistant .content { padding: 2px 0; overflow-wrap: anywhere; }
.msg.error .content { color: var(--danger); }
.content p { margin: 0 0 .7em; }
.content pre { background: var(--code); border: 1px solid var(--line); border-radius: 8px; padding: 10px 12px; overflow-x: auto; font: 13px/1.45 var(--mono); position: relative; }
.content code { font-family: var(--mono); font-size: .92em; background: var(--code); padding: 1px 4px; border-radius: 4px; }
.content pre code { background: none; padding: 0; }
.content pre .lang { position: absolute; top: 4px; right: 8px; font-size: 11px; color: var(--muted); }
.content ul, .content ol { margin: 0 0 .7em; padding-left: 1.4em; }
.content h1, .content h2, .content h3, .content h4 { margin: .6em 0 .4em; line-height: 1.25; }
.content blockquote { margin: 0 0 .7em; padding-left: 12px; border-left: 3px solid var(--line); color: var(--muted); }
details.reasoning { margin: 0 0 8px; border-left: 3px solid var(--line); padding: 2px 10px; color: var(--muted); font-size: 14px; }
details.reasoning summary { cursor: pointer; user-select: none; }
details.reasoning .think { white-space: pre-wrap; }
.stats { font-size: 12px; color: var(--muted); margin-top: 2px; }
.cursor::after { content: "▍"; animation: blink 1s steps(2) infinite; color: var(--accent); }
@keyframes blink { 50% { opacity: 0; } }
#composer { border-top: 1px solid var(--line); background: var(--panel); padding: 12px 16px 14px; }
#composer .inner { display: flex; gap: 8px; align-items: flex-end; }
#input { flex: 1; resize: none; min-height: 44px; max-height: 40vh; padding: 10px 12px; border: 1px solid var(--line); border-radius: var(--radius); background: var(--bg); }
#hint { font-size: 12px; color: var(--muted); max-width: 780px; margin: 6px auto 0; }
kbd { font: 11px var(--mono); border: 1px solid var(--line); border-radius: 4px; padding: 0 4px; }
@media (max-width: 720px) {
  #side { position: fixed; z-index: 5; inset: 0 auto 0 0; transform: translateX(-100%); transition: transform .15s; }
  body.side-open #side { transform: none; box-shadow: 0 0 30px rgba(0,0,0,.3); }
  #menu { display: inline-block; }
  #hint { display: none; }
  .msg.user .content { max-width: 95%; }
}
</style>
</head>
<body data-state="idle">
<aside id="side" aria-label="Conversations">
  <header><h1><span>&#9679;</span> Hearth</h1><button id="new" title="New chat (Ctrl+K)">New</button></header>
  <ul id="convs"></ul>
  <footer>
    <label for="key">API key (kept in this browser)</label>
    <input id="key" type="password" autocomplete="off" placeholder="none">
  </footer>
</aside>
<main>
  <div id="top">
    <button id="menu" aria-label="Conversations">&#9776;</button>
    <label for="model" class="sr">Model</label>
    <select id="model" aria-label="Model"></select>
    <span id="status" aria-live="polite"></span>
  </div>
  <div id="log" aria-live="polite"><div class="inner" id="messages"></div></div>
  <form id="composer" autocomplete="off">
    <div class="inner">
      <textarea id="input" rows="1" placeholder="Message Hearth…" aria-label="Message"></textarea>
      <button id="send" class="primary" type="submit">Send</button>
      <button id="stop" class="danger" type="button" hidden>Stop</button>
    </div>
    <div id="hint"><kbd>Enter</kbd> send · <kbd>Shift</kbd>+<kbd>Enter</kbd> new line · <kbd>Esc</kbd> stop · <kbd>Ctrl</kbd>+<kbd>K</kbd> new chat · <kbd>/</kbd> focus</div>
  </form>
</main>
<script>
"use strict";
// Hearth's chat page: everything it fetches is on this server (/v1/models, /v1/chat/completions,
// /api/show); model output is only ever put in the page as text nodes, never parsed as HTML.
const $ = (id) => document.getElementById(id);
const STORE = "hearth.chat.v1";
let state = load();
let controller = null;
let contextSize = {};

function load() {
  try {
    const s = JSON.parse(localStorage.getItem(STORE) || "null");
    if (s && Array.isArray(s.conversations)) return s;
  } catch (e) {}
  return { conversations: [], current: null, model: null, key: "" };
}
function save() {
  try { localStorage.setItem(STORE, JSON.stringify(state)); } catch (e) { status("Could not save: " + e.message); }
}
function current() { return state.conversations.find((c) => c.id === state.current) || null; }
function newConversation() {
  const c = { id: Date.now().toString(36) + Math.random().toString(36).slice(2, 7), title: "New chat", messages: [], created: Date.now() };
  state.conversations.unshift(c);
  state.current = c.id;
  save();
  return c;
}
function status(text) { $("status").textContent = text || ""; }
function headers() {
  const h = { "content-type": "application/json" };
  if (state.key) h.authorization = "Bearer " + state.key;
  return h;
}
function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

// ---- Markdown, built as DOM nodes (text only; no HTML from the model is ever parsed) ----
function inline(parent, text) {
  // Emphasis with asterisks only: underscores are common inside words and code-like text.
  const re = /(`+)([\s\S]*?[^`])\1(?!`)|\*\*([^*]+)\*\*|\*([^*\s][^*]*)\*|\[([^\]]+)\]\((https?:\/\/[^\s)]+)\)/g;
  let last = 0, m;
  while ((m = re.exec(text))) {
    if (m.index > last) parent.appendChild(document.createTextNode(text.slice(last, m.index)));
    if (m[1]) parent.appendChild(el("code", null, m[2]));
    else if (m[3]) parent.appendChild(el("strong", null, m[3]));
    else if (m[4]) parent.appendChild(el("em", null, m[4]));
    else if (m[5]) { const a = el("a", null, m[5]); a.href = m[6]; a.rel = "noopener noreferrer"; a.target = "_blank"; parent.appendChild(a); }
    last = re.lastIndex;
  }
  if (last < text.length) parent.appendChild(document.createTextNode(text.slice(last)));
}
function markdown(target, text) {
  target.textContent = "";
  const lines = text.split("\n");
  let i = 0, para = [];
  const flush = () => {
    if (!para.length) return;
    const p = el("p");
    para.forEach((l, k) => { if (k) p.appendChild(el("br")); inline(p, l); });
    target.appendChild(p);
    para = [];
  };
  while (i < lines.length) {
    const line = lines[i];
    const fence = line.match(/^\s*(```|~~~)\s*([\w+#.-]*)/);
    if (fence) {
      flush();
      const body = [];
      i++;
      while (i < lines.length && !lines[i].trim().startsWith(fence[1])) body.push(lines[i++]);
      i++;
      const pre = el("pre");
      if (fence[2]) pre.appendChild(el("span", "lang", fence[2]));
      const code = el("code", null, body.join("\n"));
      pre.appendChild(code);
      target.appendChild(pre);
      continue;
    }
    const h = line.match(/^(#{1,4})\s+(.*)/);
    if (h) { flush(); const e = el("h" + h[1].length); inline(e, h[2]); target.appendChild(e); i++; continue; }
    const li = line.match(/^\s*([-*+]|\d+[.)])\s+(.*)/);
    if (li) {
      flush();
      const list = el(/\d/.test(li[1]) ? "ol" : "ul");
      while (i < lines.length) {
        const m = lines[i].match(/^\s*([-*+]|\d+[.)])\s+(.*)/);
        if (!m) break;
        const item = el("li"); inline(item, m[2]); list.appendChild(item); i++;
      }
      target.appendChild(list);
      continue;
    }
    const q = line.match(/^>\s?(.*)/);
    if (q) { flush(); const b = el("blockquote"); inline(b, q[1]); target.appendChild(b); i++; continue; }
    if (!line.trim()) { flush(); i++; continue; }
    para.push(line);
    i++;
  }
  flush();
}

// ---- Rendering ----
function renderList() {
  const list = $("convs");
  list.textContent = "";
  for (const c of state.conversations) {
    const li = el("li", c.id === state.current ? "current" : "");
    const open = el("button", "open", c.title || "New chat");
    open.type = "button";
    open.title = c.title || "";
    open.onclick = () => { if (controller) return; state.current = c.id; save(); render(); document.body.classList.remove("side-open"); };
    const del = el("button", "del", "×");
    del.type = "button";
    del.setAttribute("aria-label", "Delete conversation");
    del.onclick = () => {
      if (controller) return;
      state.conversations = state.conversations.filter((x) => x.id !== c.id);
      if (state.current === c.id) state.current = state.conversations[0] ? state.conversations[0].id : null;
      save(); render();
    };
    li.append(open, del);
    list.appendChild(li);
  }
}
function messageNode(m) {
  const node = el("div", "msg " + m.role);
  node.appendChild(el("div", "who", m.role === "user" ? "You" : m.role === "error" ? "Error" : (m.model || "Assistant")));
  if (m.reasoning) {
    const d = el("details", "reasoning");
    d.appendChild(el("summary", null, "Reasoning"));
    d.appendChild(el("div", "think", m.reasoning));
    node.appendChild(d);
  }
  const content = el("div", "content");
  if (m.role === "assistant") markdown(content, m.content || ""); else content.textContent = m.content || "";
  node.appendChild(content);
  if (m.stats) node.appendChild(el("div", "stats", m.stats));
  if (m.role === "assistant") node.dataset.done = "1";
  return node;
}
function render() {
  renderList();
  const box = $("messages");
  box.textContent = "";
  const c = current();
  if (!c || !c.messages.length) {
    const e = el("div", "empty");
    e.appendChild(el("h2", null, "What shall we talk about?"));
    e.appendChild(el("div", null, "Replies stream from the model on this server; nothing leaves it."));
    box.appendChild(e);
    return;
  }
  for (const m of c.messages) box.appendChild(messageNode(m));
  $("log").scrollTop = $("log").scrollHeight;
}

// ---- Models ----
async function loadModels() {
  const select = $("model");
  try {
    const r = await fetch("/v1/models", { headers: headers() });
    if (!r.ok) throw new Error(r.status === 401 ? "the server needs an API key (bottom left)" : "HTTP " + r.status);
    const body = await r.json();
    const ids = (body.data || []).map((m) => m.id);
    select.textContent = "";
    for (const id of ids) select.appendChild(el("option", null, id));
    if (ids.includes(state.model)) select.value = state.model; else { state.model = ids[0] || null; save(); }
    status(ids.length ? "" : "No models on this server");
    if (state.model) loadContext(state.model);
  } catch (e) {
    status("Models: " + e.message);
  }
}
async function loadContext(model) {
  if (contextSize[model] !== undefined) return;
  try {
    const r = await fetch("/api/show", { method: "POST", headers: headers(), body: JSON.stringify({ model }) });
    if (!r.ok) return;
    const info = (await r.json()).model_info || {};
    const key = Object.keys(info).find((k) => k.endsWith(".context_length"));
    contextSize[model] = key ? info[key] : null;
  } catch (e) {}
}

// ---- Sending ----
function setBusy(busy) {
  document.body.dataset.state = busy ? "streaming" : "idle";
  $("send").hidden = busy;
  $("stop").hidden = !busy;
}
async function send(text) {
  if (controller || !text.trim()) return;
  const model = $("model").value || state.model;
  if (!model) { status("No model to send to"); return; }
  const c = current() || newConversation();
  c.messages.push({ role: "user", content: text });
  if (c.title === "New chat") c.title = text.trim().slice(0, 60);
  const reply = { role: "assistant", content: "", model };
  c.messages.push(reply);
  save();
  render();
  const box = $("messages");
  const node = box.lastChild;
  node.removeAttribute("data-done");
  const content = node.querySelector(".content");
  content.classList.add("cursor");
  let think = null;
  controller = new AbortController();
  setBusy(true);
  status("Thinking…");
  const started = performance.now();
  let first = 0, pieces = 0, usage = null, finish = null, stopped = false;
  const history = c.messages.slice(0, -1).filter((m) => m.role === "user" || m.role === "assistant")
    .map((m) => ({ role: m.role, content: m.content }));
  let pending = false;
  const paint = () => {
    pending = false;
    markdown(content, reply.content);
    if (think) think.textContent = reply.reasoning;
    const log = $("log");
    if (log.scrollHeight - log.scrollTop - log.clientHeight < 120) log.scrollTop = log.scrollHeight;
  };
  try {
    const r = await fetch("/v1/chat/completions", {
      method: "POST", headers: headers(), signal: controller.signal,
      body: JSON.stringify({ model, messages: history, stream: true, stream_options: { include_usage: true } }),
    });
    if (!r.ok) {
      let msg = "HTTP " + r.status;
      try { const b = await r.json(); msg = (b.error && (b.error.message || b.error)) || msg; } catch (e) {}
      throw new Error(msg);
    }
    const reader = r.body.getReader();
    const decoder = new TextDecoder();
    let buf = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += decoder.decode(value, { stream: true });
      let cut;
      while ((cut = buf.indexOf("\n\n")) >= 0) {
        const frame = buf.slice(0, cut);
        buf = buf.slice(cut + 2);
        for (const line of frame.split("\n")) {
          if (!line.startsWith("data:")) continue;
          const data = line.slice(5).trim();
          if (data === "[DONE]") continue;
          let ev;
          try { ev = JSON.parse(data); } catch (e) { continue; }
          if (ev.error) throw new Error(ev.error.message || "the server stopped the reply");
          if (ev.usage) usage = ev.usage;
          const ch = ev.choices && ev.choices[0];
          if (!ch) continue;
          const d = ch.delta || {};
          if (d.reasoning_content) {
            if (!think) {
              const det = el("details", "reasoning");
              det.open = true;
              det.appendChild(el("summary", null, "Reasoning"));
              think = el("div", "think");
              det.appendChild(think);
              node.insertBefore(det, content);
            }
            reply.reasoning = (reply.reasoning || "") + d.reasoning_content;
          }
          if (d.content) {
            if (!first) { first = performance.now(); status("Streaming…"); }
            reply.content += d.content;
            pieces++;
          }
          if (ch.finish_reason) finish = ch.finish_reason;
          if (!pending) { pending = true; requestAnimationFrame(paint); }
        }
      }
    }
  } catch (e) {
    if (e.name === "AbortError") stopped = true;
    else c.messages.push({ role: "error", content: String(e.message || e) });
  } finally {
    controller = null;
    setBusy(false);
    content.classList.remove("cursor");
    const end = performance.now();
    const tokens = usage ? usage.completion_tokens : pieces;
    const secs = first ? (end - first) / 1000 : 0;
    const parts = [tokens + " tokens"];
    if (secs > 0 && tokens > 1) parts.push((tokens / secs).toFixed(1) + " tok/s");
    if (usage) {
      const used = usage.prompt_tokens + usage.completion_tokens;
      const ctx = contextSize[model];
      parts.push("context " + used + (ctx ? " / " + ctx + " (" + Math.round((100 * used) / ctx) + "%)" : ""));
    }
    if (stopped) parts.push("stopped");
    else if (finish === "length") parts.push("cut at the length limit");
    reply.stats = parts.join(" · ");
    if (!reply.content && !stopped && c.messages[c.messages.length - 1] !== reply) {
      c.messages.splice(c.messages.indexOf(reply), 1);
    }
    save();
    render();
    status(stopped ? "Stopped" : "");
    $("input").focus();
  }
}
function stop() { if (controller) controller.abort(); }

// ---- Wiring ----
$("composer").addEventListener("submit", (e) => {
  e.preventDefault();
  const input = $("input");
  const text = input.value;
  if (!text.trim() || controller) return;
  input.value = "";
  grow();
  send(text);
});
$("stop").onclick = stop;
$("new").onclick = () => { if (controller) return; newConversation(); render(); $("input").focus(); };
$("menu").onclick = () => document.body.classList.toggle("side-open");
$("model").onchange = () => { state.model = $("model").value; save(); loadContext(state.model); };
$("key").value = state.key || "";
$("key").onchange = () => { state.key = $("key").value.trim(); save(); loadModels(); };
function grow() { const t = $("input"); t.style.height = "auto"; t.style.height = Math.min(t.scrollHeight, window.innerHeight * 0.4) + "px"; }
$("input").addEventListener("input", grow);
$("input").addEventListener("keydown", (e) => {
  if (e.key === "Enter" && !e.shiftKey && !e.isComposing) { e.preventDefault(); $("composer").requestSubmit(); }
});
document.addEventListener("keydown", (e) => {
  if (e.key === "Escape") { stop(); document.body.classList.remove("side-open"); }
  else if ((e.ctrlKey || e.metaKey) && e.key.toLowerCase() === "k") { e.preventDefault(); $("new").click(); }
  else if (e.key === "/" && document.activeElement !== $("input") && document.activeElement.tagName !== "INPUT") { e.preventDefault(); $("input").focus(); }
});
window.addEventListener("storage", (e) => { if (e.key === STORE && !controller) { state = load(); render(); } });
render();
loadModels();
$("input").focus();
</script>
</body>
</html>
"""#
}
