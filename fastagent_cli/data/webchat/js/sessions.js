// The conversation list (GET /control/sessions): switch, rename, fork, delete.

import { icon } from "./icons.js";

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function button(name, title, onClick) {
  const node = el("button", `icon ${name}`);
  node.append(icon(name));
  node.type = "button";
  node.title = title;
  node.setAttribute("aria-label", title);
  node.addEventListener("click", (event) => {
    event.stopPropagation();
    onClick();
  });
  return node;
}

export function ago(ms) {
  const seconds = Math.max(0, (Date.now() - ms) / 1000);
  if (seconds < 60) return "just now";
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ago`;
  if (seconds < 86400) return `${Math.floor(seconds / 3600)} h ago`;
  if (seconds < 86400 * 30) return `${Math.floor(seconds / 86400)} d ago`;
  return new Date(ms).toLocaleDateString();
}

export function titleOf(row) {
  return row.name || row.preview || row.session;
}

export class SessionList {
  // actions: {open(id), rename(id, name), fork(id), remove(id)}; capabilities gate the buttons.
  constructor(container, actions) {
    this.container = container;
    this.actions = actions;
    this.rows = [];
    this.current = null;
    this.capabilities = {};
    this.editing = null;
  }

  show(rows, current, capabilities) {
    this.rows = rows;
    this.current = current;
    this.capabilities = capabilities || {};
    if (this.editing) return; // do not pull the input from under the user's fingers
    this.render();
  }

  render() {
    const list = this.rows.slice();
    if (this.current && !list.some((row) => row.session === this.current)) {
      list.unshift({ session: this.current, preview: "New conversation", updatedAt: Date.now(), fresh: true });
    }
    if (!list.length) {
      this.container.replaceChildren(el("div", "empty", "No conversations yet."));
      return;
    }
    this.container.replaceChildren(...list.map((row) => this.row(row)));
  }

  row(row) {
    const item = el("div", "session");
    item.dataset.session = row.session;
    item.setAttribute("role", "button");
    item.tabIndex = 0;
    if (row.session === this.current) {
      item.classList.add("active");
      item.setAttribute("aria-current", "true");
    }
    const title = el("div", "session-title", titleOf(row));
    title.title = row.session;
    const meta = el("div", "session-meta", row.fresh ? "not started" : `${ago(row.updatedAt)} · ${row.messageCount} ${row.messageCount === 1 ? "message" : "messages"}`);
    const text = el("div", "session-text");
    text.append(title, meta);
    item.append(text);
    const caps = this.capabilities;
    if (!row.fresh) {
      const tools = el("div", "session-actions");
      if ((caps.updatable || []).includes("name")) tools.append(button("rename", "Rename", () => this.edit(item, row)));
      if (caps.fork) tools.append(button("fork", "Fork", () => this.actions.fork(row.session)));
      if (caps.delete) tools.append(button("delete", "Delete", () => this.actions.remove(row.session)));
      item.append(tools);
    }
    const open = () => this.actions.open(row.session);
    item.addEventListener("click", open);
    item.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && event.target === item) open();
    });
    return item;
  }

  edit(item, row) {
    const input = el("input", "rename-input");
    input.maxLength = 200; // the control plane refuses longer names
    input.value = row.name || "";
    input.placeholder = titleOf(row);
    input.setAttribute("aria-label", "Conversation name");
    this.editing = row.session;
    const finish = (save) => {
      if (this.editing !== row.session) return;
      this.editing = null;
      const name = input.value.trim();
      if (save && name && name !== row.name) this.actions.rename(row.session, name);
      this.render();
    };
    input.addEventListener("click", (event) => event.stopPropagation());
    input.addEventListener("keydown", (event) => {
      event.stopPropagation();
      if (event.key === "Enter") finish(true);
      if (event.key === "Escape") finish(false);
    });
    input.addEventListener("blur", () => finish(true));
    item.querySelector(".session-title").replaceWith(input);
    input.focus();
    input.select();
  }
}
