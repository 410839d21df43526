// Tool calls waiting for a person: one card per pending approval, with the call's arguments, an
// optional reason and Approve / Deny. The session keeps the pending set in step with the server
// (state().approvals on every resync, approval_requested / approval_resolved live), so every open
// tab shows the same cards and a card answered in one tab leaves all of them. A card's node is
// kept by approval id: re-rendering (every streamed delta) never loses a reason being typed.

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function pretty(value) {
  try {
    return typeof value === "string" ? value : JSON.stringify(value, null, 2);
  } catch {
    return String(value);
  }
}

function expiry(at) {
  if (!at) return "no expiry";
  const when = new Date(at);
  return `denied at ${when.toLocaleString()} unless answered`;
}

export class ApprovalCards {
  constructor() {
    this.cards = new Map(); // approval id -> card node
  }

  // The cards of the approvals pending in `model`, oldest first.
  nodes(model) {
    const pending = model.approvals || new Map();
    for (const id of [...this.cards.keys()]) if (!pending.has(id)) this.cards.delete(id);
    const out = [];
    for (const [id, approval] of pending) {
      let card = this.cards.get(id);
      if (!card) {
        card = this.card(approval);
        this.cards.set(id, card);
      }
      out.push(card);
    }
    return out;
  }

  card(approval) {
    const card = el("div", "approval-card");
    card.dataset.approvalId = approval.id;
    card.setAttribute("role", "group");
    card.setAttribute("aria-label", `Approve ${approval.tool}?`);
    const head = el("div", "approval-head");
    head.append(el("span", "approval-title", "Approval needed: "), el("code", "approval-tool", approval.tool));
    const args = el("pre", "approval-args", pretty(approval.args));
    const reason = el("input", "approval-reason");
    reason.type = "text";
    reason.placeholder = "Reason (optional, the model reads it on a deny)";
    reason.maxLength = 2000;
    const buttons = el("div", "approval-buttons");
    for (const [decision, label] of [["approve", "Approve"], ["deny", "Deny"]]) {
      const button = el("button", `approval-${decision}`, label);
      button.type = "button";
      button.dataset.decision = decision;
      buttons.append(button);
    }
    const status = el("div", "approval-status", expiry(approval.expiresAt));
    card.append(head, args, reason, buttons, status);
    return card;
  }
}

// The answer a click on a card's button asks for: {id, decision, reason, card}, or null.
export function clickedAnswer(event) {
  const button = event.target.closest(".approval-card button[data-decision]");
  if (!button) return null;
  const card = button.closest(".approval-card");
  const reason = card.querySelector(".approval-reason").value.trim();
  return { id: card.dataset.approvalId, decision: button.dataset.decision, reason, card };
}
