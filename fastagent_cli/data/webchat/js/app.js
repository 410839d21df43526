// The web chat page: wires the control plane (api.js), the open session (session.js), the
// transcript, the conversation list and the message box together.

import { api, readAddress, showSessionInAddress, token, Unauthorized } from "./api.js";
import { clickedAnswer } from "./approvals.js";
import { Attachments } from "./attachments.js";
import { Composer } from "./composer.js";
import { icon } from "./icons.js";
import { SessionModel } from "./session.js";
import { SessionList, titleOf } from "./sessions.js";
import { Transcript } from "./transcript.js";

const $ = (id) => document.getElementById(id);
const LIST_REFRESH_MS = 15_000;
const HIDDEN_GRACE_MS = 60_000;

const page = {
  capabilities: {},
  commands: [],
  rows: [],
  model: null,
  transcript: null,
  list: null,
  composer: null,
  started: false,
};

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function newSessionId() {
  const stamp = new Date().toISOString().slice(0, 19).replace(/[-:T]/g, "");
  const random = Math.random().toString(36).slice(2, 6);
  return `web-${stamp}-${random}`;
}

function toast(text, kind = "error") {
  const node = el("div", `toast ${kind}`, text);
  $("toasts").append(node);
  setTimeout(() => node.remove(), 6000);
}

function failed(result, what) {
  if (result.ok) return false;
  toast(`${what}: ${result.error.message}`);
  return true;
}

// --- signing in ------------------------------------------------------------------------------

function signIn(message) {
  if (page.model) page.model.close();
  token.clear();
  $("app").hidden = true;
  $("signin").hidden = false;
  $("signin-message").textContent = message;
  $("signin-token").focus();
}

function unauthorized() {
  signIn("The control token was refused (a restarted server may have a new one).");
}

$("signin-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const value = $("signin-token").value.trim();
  if (!value) return;
  token.set(value);
  location.reload();
});

// --- the open session ------------------------------------------------------------------------

function open(id) {
  if (page.model && page.model.id === id) return;
  if (page.model) page.model.close();
  page.transcript.reset();
  page.model = new SessionModel(id, {
    onChange: (model) => {
      if (model !== page.model) return;
      page.transcript.render(model);
      chrome();
    },
    onConnection: (state) => {
      const node = $("connection");
      node.dataset.state = state;
      node.textContent = { live: "", reconnecting: "reconnecting…", paused: "paused" }[state] ?? "connecting…";
    },
    onUnauthorized: unauthorized,
    onSettled: () => refreshList(),
    onStateChanged: () => refreshList(),
  }).start();
  showSessionInAddress(id);
  page.transcript.render(page.model);
  showList();
  chrome();
  closeDrawer();
  $("input").focus();
}

// The texts of a queue to show: a server that sends only counts gets a placeholder per prompt.
function texts(shown, count) {
  const out = Array.isArray(shown) ? [...shown] : [];
  while (out.length < (count || 0)) out.push("(queued prompt)");
  return out;
}

function queued(pending = {}) {
  return {
    steering: texts(pending.steeringTexts, pending.steering),
    followUp: texts(pending.followUpTexts, pending.followUp),
  };
}

function current() {
  return page.model;
}

// Everything around the transcript that follows the session: title, buttons, selects, status.
function chrome() {
  const model = current();
  if (!model) return;
  const row = page.rows.find((r) => r.session === model.id);
  const title = model.state.name || (row && titleOf(row)) || "New conversation";
  $("title").textContent = title;
  document.title = `${title} · ${$("brand")?.textContent || "fastagent"}`;
  const running = model.running;
  page.composer.setRunning(running);
  $("send").textContent = running ? "Steer" : "Send";
  $("send").title = running ? "Send now: the run reads it before its next step (Enter)" : "Send (Enter)";
  $("queue").hidden = !running;
  $("stop").hidden = !running;
  const pending = queued(model.state.pending);
  const chips = [
    ...pending.steering.map((text) => ["steer", "Steering", text]),
    ...pending.followUp.map((text) => ["follow-up", "Queued", text]),
  ];
  $("pending").hidden = !chips.length;
  $("pending").replaceChildren(
    ...chips.map(([kind, label, text]) => {
      const chip = el("div", `chip ${kind}`);
      chip.append(el("span", "chip-label", label), el("span", "chip-text", text));
      return chip;
    }),
  );
  settings(model);
  const status = model.state.status;
  $("run-status").textContent = status === "running" ? "Running" : status === "compacting" ? "Compacting" : "Idle";
  $("run-status").dataset.status = status;
  const usage = model.state.usage;
  const parts = [];
  if (usage && usage.contextTokens !== undefined && usage.contextWindow)
    parts.push(`context ${Math.round((usage.contextTokens / usage.contextWindow) * 100)}% of ${Math.round(usage.contextWindow / 1000)}k`);
  const totals = model.state.totals;
  if (totals) parts.push(spendText(totals));
  $("usage").textContent = parts.join(" · ");
}

function spendText(totals) {
  const tokens = totals.totalTokens;
  const shown = tokens < 1000 ? `${tokens}` : tokens < 1e6 ? `${(tokens / 1000).toFixed(1)}k` : `${(tokens / 1e6).toFixed(2)}M`;
  const cost = totals.cost ? ` · $${totals.cost < 1 ? totals.cost.toFixed(4) : totals.cost.toFixed(2)}` : "";
  return `${shown} tokens${cost}`;
}

function fill(select, values, chosen) {
  const have = [...select.options].map((o) => o.value).join("\n");
  if (have !== values.join("\n")) select.replaceChildren(...values.map((value) => el("option", "", value)));
  if (chosen && select.value !== chosen) select.value = chosen;
}

function settings(model) {
  const caps = page.capabilities;
  const updatable = caps.updatable || [];
  const models = caps.modelSelection ? caps.modelSelection.allowedModels : [];
  const modelSelect = $("model");
  const chosenModel = model.state.model || "";
  fill(modelSelect, models.includes(chosenModel) || !chosenModel ? models : [chosenModel, ...models], chosenModel);
  modelSelect.disabled = !updatable.includes("model") || !model.exists || model.running;
  modelSelect.title = model.exists ? "The model this conversation runs with" : "Send a first message to choose";
  const levels = model.state.availableThinkingLevels || (model.state.thinkingLevel ? [model.state.thinkingLevel] : []);
  const thinking = $("thinking");
  fill(thinking, levels, model.state.thinkingLevel);
  thinking.disabled = !updatable.includes("thinkingLevel") || !model.exists || model.running || levels.length < 2;
}

async function patch(field, value) {
  const model = current();
  try {
    const result = await api.update(model.id, { [field]: value });
    if (failed(result, "Not changed")) model.refreshState();
  } catch (error) {
    handle(error, "Not changed");
    model.refreshState();
  }
}

// --- acting ----------------------------------------------------------------------------------

function handle(error, what) {
  if (error instanceof Unauthorized) unauthorized();
  else toast(`${what}: ${error.message}`);
}

// A send while a run holds the session steers it; a steer that finds the run gone sends (once).
async function send(text, images = [], documents = [], fallback = true) {
  const model = current();
  model.notice = null; // before: a run refused at once settles (with its notice) before the reply
  try {
    const result = await api.invoke(model.id, text, images, documents);
    if (!result.ok && result.error.code === "session_busy" && fallback) return act("steer", text, images, documents, false);
    if (failed(result, "Not sent")) return false;
    model.exists = true;
    setTimeout(refreshList, 500);
    return true;
  } catch (error) {
    handle(error, "Not sent");
    return false;
  }
}

async function act(kind, text, images = [], documents = [], fallback = true) {
  const model = current();
  try {
    const prompt = { text };
    if (images.length) prompt.images = images;
    if (documents.length) prompt.documents = documents;
    const result = await api.action(model.id, { type: kind, prompt });
    if (!result.ok && fallback && ["no_active_run", "run_command_failed"].includes(result.error.code)) {
      return send(text, images, documents, false); // the run ended meanwhile
    }
    return !failed(result, "Not sent");
  } catch (error) {
    handle(error, "Not sent");
    return false;
  }
}

const steer = (text, images, documents) => act("steer", text, images, documents);
const followUp = (text, images, documents) => act("follow_up", text, images, documents);

async function compact() {
  try {
    const result = await api.action(current().id, { type: "compact" });
    if (!failed(result, "Not compacted")) {
      page.model.notice = null;
      page.model.changed();
    }
  } catch (error) {
    handle(error, "Not compacted");
  }
}

// Approve / Deny on an approval card: the card leaves every tab once the server resolves it.
async function answerApproval(answer) {
  const model = current();
  for (const button of answer.card.querySelectorAll("button")) button.disabled = true;
  try {
    await api.answer(model.id, answer.id, answer.decision, answer.reason);
  } catch (error) {
    handle(error, answer.decision === "approve" ? "Not approved" : "Not denied");
    model.refreshState(); // answered elsewhere, expired: the server's list is the truth
  } finally {
    for (const button of answer.card.querySelectorAll("button")) button.disabled = false;
  }
}

async function stop() {
  try {
    const result = await api.action(current().id, { type: "abort" });
    if (!result.ok && result.error.code !== "no_active_run") failed(result, "Not stopped");
  } catch (error) {
    handle(error, "Not stopped");
  }
}

async function rename(id, name) {
  try {
    if (!failed(await api.update(id, { name }), "Not renamed")) await refreshList();
  } catch (error) {
    handle(error, "Not renamed");
  }
}

async function fork(id) {
  try {
    const at = id === current().id ? current().leaf : (await api.state(id)).leafEntryId;
    if (!at) {
      toast("Nothing to fork yet");
      return;
    }
    const into = newSessionId();
    if (failed(await api.fork(into, id, at), "Not forked")) return;
    const row = page.rows.find((r) => r.session === id);
    if (row && (page.capabilities.updatable || []).includes("name")) {
      await api.update(into, { name: `${titleOf(row)} (fork)` }); // tell the two apart in the list
    }
    await refreshList();
    open(into);
    toast("Forked into a new conversation", "info");
  } catch (error) {
    handle(error, "Not forked");
  }
}

async function remove(id) {
  const row = page.rows.find((r) => r.session === id);
  if (!(await confirmDialog(`Delete “${row ? titleOf(row) : id}”? This cannot be undone.`))) return;
  try {
    if (failed(await api.remove(id), "Not deleted")) return;
    await refreshList();
    if (current() && current().id === id) open((page.rows[0] && page.rows[0].session) || newSessionId());
  } catch (error) {
    handle(error, "Not deleted");
  }
}

function confirmDialog(message) {
  const dialog = $("confirm");
  $("confirm-message").textContent = message;
  dialog.showModal();
  return new Promise((resolve) => {
    dialog.addEventListener("close", () => resolve(dialog.returnValue === "yes"), { once: true });
  });
}

// --- the conversation list -------------------------------------------------------------------

function showList() {
  page.list.show(page.rows, current() && current().id, page.capabilities);
}

async function refreshList() {
  try {
    page.rows = await api.sessions();
    showList();
    chrome();
  } catch (error) {
    if (error instanceof Unauthorized) unauthorized();
  }
}

function openDrawer() {
  document.body.classList.add("drawer-open");
  $("scrim").hidden = false;
}

function closeDrawer() {
  document.body.classList.remove("drawer-open");
  $("scrim").hidden = true;
}

// --- start -----------------------------------------------------------------------------------

async function start(wanted) {
  try {
    [page.capabilities, page.commands] = await Promise.all([api.capabilities(), api.commands().catch(() => [])]);
  } catch (error) {
    if (error instanceof Unauthorized) return unauthorized();
    $("signin").hidden = true;
    $("boot").hidden = false;
    $("boot").textContent = `Cannot reach the agent (${error.message}); retrying…`;
    setTimeout(() => start(wanted), 2000);
    return;
  }
  $("boot").hidden = true;
  $("app").hidden = false;
  page.composer.setCommands(page.commands);
  await refreshList();
  open(wanted || (page.rows[0] && page.rows[0].session) || newSessionId());
  if (!page.started) {
    page.started = true;
    setInterval(refreshList, LIST_REFRESH_MS);
    window.addEventListener("focus", refreshList);
  }
}

function boot() {
  const { session } = readAddress();
  page.transcript = new Transcript($("transcript"));
  page.list = new SessionList($("sessions"), { open, rename, fork, remove });
  page.composer = new Composer({
    form: $("composer"),
    input: $("input"),
    menu: $("commands"),
    handlers: { send, steer, followUp },
    attachments: new Attachments({
      list: $("attachments"),
      picker: $("attach-file"),
      button: $("attach"),
      input: $("input"),
      dropZone: $("composer"),
      onError: (text) => toast(text),
    }),
  });
  $("menu").replaceChildren(icon("menu"));
  $("attach").replaceChildren(icon("attach"));
  $("queue").addEventListener("click", () => page.composer.submit("followUp"));
  $("stop").addEventListener("click", stop);
  $("transcript").addEventListener("click", (event) => event.target.closest("[data-action=compact]") && compact());
  $("transcript").addEventListener("click", (event) => {
    const answer = clickedAnswer(event);
    if (answer) answerApproval(answer);
  });
  $("new-chat").addEventListener("click", () => open(newSessionId()));
  $("menu").addEventListener("click", () => (document.body.classList.contains("drawer-open") ? closeDrawer() : openDrawer()));
  $("scrim").addEventListener("click", closeDrawer);
  $("model").addEventListener("change", (event) => patch("model", event.target.value));
  $("thinking").addEventListener("change", (event) => patch("thinkingLevel", event.target.value));
  // Browsers allow six connections to one server over HTTP/1.1, and an event stream holds one:
  // let it go as soon as the page is left or hidden a while, and resync when it is back.
  window.addEventListener("pagehide", () => page.model && page.model.pause());
  window.addEventListener("pageshow", (event) => event.persisted && page.model && page.model.resume());
  document.addEventListener("visibilitychange", () => {
    clearTimeout(page.hiding);
    if (!page.model) return;
    if (document.hidden) page.hiding = setTimeout(() => page.model.pause(), HIDDEN_GRACE_MS);
    else page.model.resume();
  });
  if (!token.get()) {
    signIn("This page needs the agent's control token.");
    return;
  }
  start(session);
}

boot();
