// The message box: Enter sends (or, while a run streams, steers it), Alt+Enter queues a
// follow-up, Shift+Enter starts a new line; "/" at the start offers the agent's skills. The
// images and PDFs attached (attachments.js) go with the message, and come back with its text if it
// is refused.

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

// "/name request" for a known skill becomes the prompt chat sends for it.
export function expandCommand(text, commands) {
  const match = /^\/(\S+)(?:\s+([\s\S]*))?$/.exec(text.trim());
  if (!match) return text;
  const command = commands.find((c) => c.name === match[1]);
  if (!command) return text;
  const request = (match[2] || "").trim();
  const ask = `Use the "${command.name}" skill.`;
  return request ? `${ask}\n\n${request}` : ask;
}

export class Composer {
  // handlers: {send, steer, followUp}, each (text, images, documents); attachments: an
  // Attachments (optional)
  constructor({ form, input, menu, handlers, attachments }) {
    this.form = form;
    this.input = input;
    this.menu = menu;
    this.handlers = handlers;
    this.attachments = attachments || null;
    this.sending = false;
    this.commands = [];
    this.matches = [];
    this.selected = 0;
    this.running = false;
    input.addEventListener("input", () => {
      this.grow();
      this.complete();
    });
    input.addEventListener("keydown", (event) => this.key(event));
    input.addEventListener("blur", () => setTimeout(() => this.closeMenu(), 150));
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      this.submit(this.running ? "steer" : "send");
    });
  }

  setCommands(commands) {
    this.commands = commands || [];
  }

  setRunning(running) {
    this.running = running;
    this.input.placeholder = running
      ? "Steer the run (Enter) or queue a follow-up (Alt+Enter)…"
      : "Message the agent — / for skills, Shift+Enter for a new line";
  }

  grow() {
    this.input.style.height = "auto";
    this.input.style.height = `${Math.min(this.input.scrollHeight, 240)}px`;
  }

  key(event) {
    if (this.matches.length) {
      if (event.key === "ArrowDown" || event.key === "ArrowUp") {
        event.preventDefault();
        const step = event.key === "ArrowDown" ? 1 : -1;
        this.selected = (this.selected + step + this.matches.length) % this.matches.length;
        this.showMenu();
        return;
      }
      if (event.key === "Tab" || (event.key === "Enter" && !event.shiftKey && !event.altKey)) {
        event.preventDefault();
        this.accept(this.matches[this.selected]);
        return;
      }
      if (event.key === "Escape") {
        event.preventDefault();
        this.closeMenu();
        return;
      }
    }
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      this.submit(event.altKey ? "followUp" : this.running ? "steer" : "send");
    }
  }

  async submit(kind) {
    const raw = this.input.value;
    const text = expandCommand(raw, this.commands);
    const attachments = this.attachments;
    const attached = attachments ? attachments.count : 0;
    if ((!text.trim() && !attached) || this.sending) return;
    const how = kind === "followUp" && !this.running ? "send" : kind;
    this.closeMenu();
    let images = [];
    let documents = [];
    if (attached) {
      this.sending = true; // fitting the images takes a moment: Enter again does not send twice
      try {
        ({ images, documents } = await attachments.encode(text));
      } catch (error) {
        attachments.onError(`Not sent: ${error.message}`);
        return; // the text and the images stay, to remove the one that cannot go
      } finally {
        this.sending = false;
      }
    }
    const taken = attached ? attachments.take() : [];
    this.input.value = "";
    this.grow();
    const sent = await this.handlers[how](text, images, documents);
    if (sent === false) {
      if (!this.input.value) {
        this.input.value = raw; // refused: give the text back
        this.grow();
      }
      if (taken.length && !attachments.count) attachments.restore(taken);
    }
  }

  complete() {
    const match = /^\/(\S*)$/.exec(this.input.value);
    if (!match || !this.commands.length) {
      this.closeMenu();
      return;
    }
    const typed = match[1].toLowerCase();
    this.matches = this.commands.filter((c) => c.name.toLowerCase().startsWith(typed));
    if (!this.matches.length) this.matches = this.commands.filter((c) => c.name.toLowerCase().includes(typed));
    this.selected = 0;
    this.showMenu();
  }

  showMenu() {
    if (!this.matches.length) {
      this.closeMenu();
      return;
    }
    this.menu.replaceChildren(
      ...this.matches.map((command, index) => {
        const item = el("div", "command");
        item.setAttribute("role", "option");
        item.dataset.command = command.name;
        if (index === this.selected) {
          item.classList.add("selected");
          item.setAttribute("aria-selected", "true");
        }
        item.append(el("span", "command-name", `/${command.name}`), el("span", "command-description", command.description || ""));
        item.addEventListener("mousedown", (event) => {
          event.preventDefault();
          this.accept(command);
        });
        return item;
      }),
    );
    this.menu.hidden = false;
  }

  closeMenu() {
    this.matches = [];
    this.menu.hidden = true;
  }

  accept(command) {
    this.input.value = `/${command.name} `;
    this.closeMenu();
    this.input.focus();
    this.input.setSelectionRange(this.input.value.length, this.input.value.length);
  }
}
