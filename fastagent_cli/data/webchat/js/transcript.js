// The conversation on screen: durable entries (rendered once each, kept by id) followed by the
// live part (the answer streaming now, tools running now, a notice). Tool calls are lines that
// expand to their arguments and result; thinking is folded away.

import { ApprovalCards } from "./approvals.js";
import { icon } from "./icons.js";
import { renderMarkdown } from "./markdown.js";

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function pretty(value) {
  if (value === undefined || value === null) return "";
  if (typeof value === "string") return value;
  return JSON.stringify(value, null, 2);
}

// A tool's result content (an array of {type: "text", text} blocks, {content: blocks, details} as a
// tool_finished event carries them, or anything) as text.
function resultText(content) {
  if (content && !Array.isArray(content) && Array.isArray(content.content)) content = content.content;
  if (Array.isArray(content)) {
    return content.map((block) => (block && block.type === "text" ? block.text : pretty(block))).join("\n");
  }
  return pretty(content);
}

function argsPreview(args) {
  if (!args || typeof args !== "object") return "";
  const parts = Object.entries(args).map(([key, value]) => {
    const text = typeof value === "string" ? value : JSON.stringify(value);
    return `${key}: ${text}`;
  });
  const line = parts.join(", ").replace(/\s+/g, " ");
  return line.length > 90 ? `${line.slice(0, 89)}…` : line;
}

const STATUS_LABEL = { running: "running", done: "done", error: "error", pending: "no result" };

export class ToolLine {
  constructor(id) {
    this.id = id;
    this.node = el("details", "tool");
    this.node.dataset.toolId = id;
    const summary = el("summary");
    this.icon = el("span", "tool-icon");
    this.name = el("span", "tool-name");
    this.preview = el("span", "tool-preview");
    this.status = el("span", "tool-status");
    summary.append(this.icon, this.name, this.preview, this.status);
    this.body = el("div", "tool-body");
    this.argsBlock = el("pre", "tool-args");
    this.resultBlock = el("pre", "tool-result");
    this.body.append(el("div", "tool-label", "Arguments"), this.argsBlock, el("div", "tool-label", "Result"), this.resultBlock);
    this.node.append(summary, this.body);
    this.shown = {};
  }

  update({ name, args, status, result }) {
    const next = { name: name || "tool", args: pretty(args), status, result: result || "" };
    if (next.name !== this.shown.name) this.name.textContent = next.name;
    if (next.args !== this.shown.args) {
      this.argsBlock.textContent = next.args || "(none)";
      this.preview.textContent = argsPreview(args);
    }
    if (next.status !== this.shown.status) {
      this.node.dataset.status = status;
      this.status.textContent = STATUS_LABEL[status] || status;
    }
    if (next.result !== this.shown.result) {
      this.resultBlock.textContent = next.result || (status === "running" ? "…" : "(no result)");
    }
    this.shown = next;
  }
}

export class Transcript {
  constructor(container) {
    this.container = container;
    this.reset();
  }

  reset() {
    this.nodes = new Map(); // entry id -> node
    this.tools = new Map(); // tool call id -> ToolLine
    this.container.replaceChildren();
    this.liveNode = el("div", "live");
    this.approvalCards = new ApprovalCards();
    this.liveMessage = null;
    this.liveText = null;
  }

  tool(id) {
    let line = this.tools.get(id);
    if (!line) {
      line = new ToolLine(id);
      this.tools.set(id, line);
    }
    return line;
  }

  render(model) {
    const stick = this.nearBottom();
    const path = model.path();
    const results = new Map();
    for (const entry of path) if (entry.kind === "tool") results.set(entry.data.toolCallId, entry);
    const wanted = [];
    let lastAssistant = null;
    for (const entry of path) {
      const node = this.entryNode(entry, results);
      if (node) wanted.push(node);
      if (entry.kind === "assistant") lastAssistant = entry;
    }
    this.updateTools(model, path, results, lastAssistant);
    this.renderLive(model, path);
    wanted.push(this.liveNode);
    this.reconcile(wanted);
    if (stick) this.scrollToEnd();
  }

  reconcile(wanted) {
    const box = this.container;
    wanted.forEach((node, index) => {
      if (box.children[index] !== node) box.insertBefore(node, box.children[index] || null);
    });
    while (box.children.length > wanted.length) box.lastElementChild.remove();
  }

  entryNode(entry, results) {
    if (this.nodes.has(entry.id)) return this.nodes.get(entry.id);
    let node = null;
    if (entry.kind === "user") {
      node = el("div", "msg user");
      const files = (entry.data.images || []).length + (entry.data.documents || []).length;
      if (entry.data.images && entry.data.images.length) node.append(imageRow(entry.data.images));
      if (entry.data.documents && entry.data.documents.length) node.append(documentRow(entry.data.documents));
      if (entry.data.text || !files) node.append(el("div", "bubble", entry.data.text));
    } else if (entry.kind === "assistant") {
      node = el("div", "msg assistant");
      if (entry.data.thinking) node.append(thinkingBlock(entry.data.thinking));
      if (entry.data.text) node.append(renderMarkdown(entry.data.text));
      for (const call of entry.data.toolCalls || []) node.append(this.tool(call.id).node);
      // the partial answer of a stopped (or failed) turn stays, marked as cut off
      if (entry.data.stopReason === "aborted") node.append(el("div", "cut-off", "Stopped"));
      else if (entry.data.stopReason === "error") node.append(el("div", "cut-off error", entry.data.errorMessage || "Failed"));
      else if (entry.data.stopReason === "length") node.append(el("div", "cut-off", "Cut off: the answer reached the output token limit"));
    } else if (entry.kind === "tool") {
      if (this.tools.has(entry.data.toolCallId)) return null; // shown on its call's line
      node = el("div", "msg assistant");
      node.append(this.tool(entry.data.toolCallId).node);
    } else if (entry.kind === "compaction") {
      node = el("div", "divider", "Earlier conversation compacted");
    } else {
      return null;
    }
    node.dataset.entryId = entry.id;
    this.nodes.set(entry.id, node);
    return node;
  }

  updateTools(model, path, results, lastAssistant) {
    const live = model.live.tools;
    for (const entry of path) {
      if (entry.kind === "assistant") {
        for (const call of entry.data.toolCalls || []) {
          const done = results.get(call.id);
          const now = live.get(call.id);
          let status = "pending";
          let result = "";
          if (done) {
            status = done.data.isError ? "error" : "done";
            result = done.data.text;
          } else if (now) {
            status = now.status;
            result = resultText(now.content !== undefined ? now.content : now.partial);
          } else if (model.running && entry === lastAssistant) {
            status = "running";
          }
          this.tool(call.id).update({ name: call.name, args: call.args, status, result });
        }
      } else if (entry.kind === "tool" && !path.some((e) => (e.data.toolCalls || []).some((c) => c.id === entry.data.toolCallId))) {
        this.tool(entry.data.toolCallId).update({
          name: entry.data.toolName,
          status: entry.data.isError ? "error" : "done",
          result: entry.data.text,
        });
      }
    }
  }

  renderLive(model, path) {
    const parts = [];
    const durableCalls = new Set();
    for (const entry of path) for (const call of entry.data.toolCalls || []) durableCalls.add(call.id);
    const message = model.live.message;
    if (message) {
      if (!this.liveMessage) {
        this.liveMessage = el("div", "msg assistant streaming");
        this.liveThinking = thinkingBlock("");
        this.liveBody = el("div");
      }
      this.liveThinking.hidden = !message.thinking;
      this.liveThinking.querySelector(".thinking-text").textContent = message.thinking;
      if (message.text !== this.liveText) {
        this.liveText = message.text;
        const body = renderMarkdown((message.late ? "… " : "") + message.text);
        this.liveBody.replaceChildren(...body.childNodes);
        this.liveBody.className = "md";
      }
      this.liveMessage.replaceChildren(this.liveThinking, this.liveBody);
      parts.push(this.liveMessage);
    } else {
      this.liveMessage = null;
      this.liveText = null;
    }
    for (const [id, tool] of model.live.tools) {
      if (durableCalls.has(id)) continue; // shown on its durable line
      const line = this.tool(id);
      line.update({ name: tool.name, args: tool.args, status: tool.status, result: resultText(tool.content !== undefined ? tool.content : tool.partial) });
      const wrap = el("div", "msg assistant");
      wrap.append(line.node);
      parts.push(wrap);
    }
    parts.push(...this.approvalCards.nodes(model));
    if (model.running) {
      const status = el("div", "run-status");
      status.append(el("span", "spinner"), el("span", "", model.live.notice || (model.state.status === "compacting" ? "Compacting…" : "Working…")));
      parts.push(status);
    } else if (model.notice) {
      const notice = el("div", `notice ${model.notice.kind}`, model.notice.text);
      if (model.notice.offerCompact) {
        // the refusal says compacting would help: offer it where it is read
        const button = el("button", "notice-action", "Compact the conversation");
        button.type = "button";
        button.dataset.action = "compact";
        notice.append(" ", button);
      }
      parts.push(notice);
    }
    this.liveNode.replaceChildren(...parts);
  }

  nearBottom() {
    const box = this.container.parentElement;
    return box.scrollHeight - box.scrollTop - box.clientHeight < 80;
  }

  scrollToEnd() {
    const box = this.container.parentElement;
    box.scrollTop = box.scrollHeight;
  }
}

// A prompt's images as thumbnails (a click shows one at full width, another click shrinks it).
function imageRow(images) {
  const row = el("div", "msg-images");
  images.forEach((image, index) => {
    const img = el("img", "msg-image");
    img.alt = `image ${index + 1} (${image.mimeType})`;
    img.src = `data:${image.mimeType};base64,${image.data}`;
    img.addEventListener("click", () => img.classList.toggle("enlarged"));
    row.append(img);
  });
  return row;
}

// A prompt's PDFs as chips naming them (the record keeps the file; the entries carry its name and size).
function documentRow(documents) {
  const row = el("div", "msg-documents");
  for (const document of documents) {
    const chip = el("span", "msg-document");
    const size = document.bytes >= 1e5 ? `${(document.bytes / 1e6).toFixed(1)} MB` : `${Math.max(1, Math.round(document.bytes / 1024))} KB`;
    chip.title = `${document.name} (${document.mimeType}, ${size})`;
    chip.append(icon("document"), el("span", "msg-document-name", document.name));
    row.append(chip);
  }
  return row;
}

function thinkingBlock(text) {
  const node = el("details", "thinking");
  node.append(el("summary", "", "Thinking"), el("div", "thinking-text", text));
  return node;
}
