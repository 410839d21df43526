// One open session: its durable entries, its state and the live run, kept in step with the server.
//
// The recipe of docs/control-plane.md: subscribe to the events first, then read state() and
// entries(since=last seen) (nothing is missed in between), then follow the live events. After a
// disconnect (a dropped connection, a server restart: a new epoch, a gap in seq, three missed
// pings) it reconnects with a growing pause and resyncs from entries(since=...), never from the
// live stream. Durable entries are the truth; the live part (the answer streaming now, tools
// running now) is replaced by the entries it becomes.

import { api, openEvents, Unauthorized } from "./api.js";

const PING_LIMIT_MS = 95_000; // three missed 30 s pings
const RETRY_MS = [250, 500, 1000, 2000, 4000];
// state.pending on the wire: counts, with the texts beside them (docs/control-plane.md).
const EMPTY_QUEUES = Object.freeze({ steering: 0, followUp: 0, steeringTexts: [], followUpTexts: [] });

export class SessionModel {
  constructor(id, { onChange, onConnection, onUnauthorized, onSettled, onStateChanged }) {
    this.id = id;
    this.entries = new Map();
    this.leaf = null;
    this.last = null; // the newest entry id seen, in append order (the entries(since=) cursor)
    this.state = { status: "idle", pending: EMPTY_QUEUES };
    this.live = emptyLive();
    this.approvals = new Map(); // approval id -> {id, toolCallId, tool, args, requestedAt, expiresAt}
    this.notice = null; // {kind: "error" | "info", text}
    this.connection = "connecting";
    this.exists = false;
    this.hooks = { onChange, onConnection, onUnauthorized, onSettled, onStateChanged };
    this.closed = false;
    this.paused = false;
    this.waking = null;
    this.abort = null;
    this.syncing = null;
    this.resyncAgain = false;
    this.epoch = null;
  }

  get running() {
    return this.state.status !== "idle";
  }

  // --- connection ------------------------------------------------------------------------------

  start() {
    this.loop();
    return this;
  }

  close() {
    this.closed = true;
    this.pause();
  }

  // Let the event stream go (the page is hidden or left); resume() reconnects and resyncs.
  pause() {
    this.paused = true;
    if (this.abort) this.abort.abort();
    clearTimeout(this.watchdog);
  }

  resume() {
    if (this.closed || !this.paused) return;
    this.paused = false;
    if (this.waking) this.waking();
  }

  setConnection(value) {
    if (this.connection !== value) {
      this.connection = value;
      this.hooks.onConnection(value);
    }
  }

  async loop() {
    let failures = 0;
    while (!this.closed) {
      if (this.paused) {
        this.setConnection("paused");
        await new Promise((resolve) => (this.waking = resolve));
        this.waking = null;
        failures = 0;
        continue;
      }
      try {
        await this.follow(() => (failures = 0));
      } catch (error) {
        if (this.closed) return;
        if (error instanceof Unauthorized) {
          this.hooks.onUnauthorized();
          return;
        }
        console.warn(`session ${this.id}: ${error.message}; reconnecting`, error);
      }
      if (this.closed) return;
      if (this.paused) continue;
      this.setConnection("reconnecting");
      await sleep(RETRY_MS[Math.min(failures, RETRY_MS.length - 1)]);
      failures += 1;
    }
  }

  async follow(connected) {
    this.abort = new AbortController();
    const messages = await openEvents(this.id, this.abort.signal);
    this.armWatchdog();
    let seq = 0;
    // Subscribed: whatever happens from here on arrives as an event, so the backfill misses nothing.
    this.live = emptyLive(); // deltas missed while away are in the entries, or lost with the old server
    await this.resync();
    this.setConnection("live");
    connected();
    for await (const message of messages) {
      this.armWatchdog();
      if (message.ping) continue;
      if (message.seq !== seq) throw new Error("lost events"); // a gap: resync through a reconnect
      seq += 1;
      if (this.epoch !== message.epoch) this.epoch = message.epoch;
      this.handle(message.event);
    }
    throw new Error("the event stream ended");
  }

  armWatchdog() {
    clearTimeout(this.watchdog);
    this.watchdog = setTimeout(() => this.abort && this.abort.abort(), PING_LIMIT_MS);
  }

  // --- reading ---------------------------------------------------------------------------------

  async resync() {
    const [state, entries] = await Promise.all([api.state(this.id), api.entries(this.id, this.last)]);
    this.applyState(state);
    this.merge(entries);
    if (!this.running) this.live = emptyLive();
    this.changed();
  }

  // entries(since=last) after something became durable; calls made while one runs are folded into one more.
  sync() {
    if (this.syncing) {
      this.resyncAgain = true;
      return this.syncing;
    }
    this.syncing = (async () => {
      try {
        do {
          this.resyncAgain = false;
          this.merge(await api.entries(this.id, this.last));
        } while (this.resyncAgain);
        this.changed();
      } catch (error) {
        if (error instanceof Unauthorized) this.hooks.onUnauthorized();
      } finally {
        this.syncing = null;
      }
    })();
    return this.syncing;
  }

  merge(result) {
    for (const entry of result.entries) {
      if (!this.entries.has(entry.id)) this.entries.set(entry.id, entry);
      this.last = entry.id;
    }
    if (result.leafEntryId) this.leaf = result.leafEntryId;
    if (this.entries.size) this.exists = true;
    // Live parts that are durable now give way to their entries.
    if (this.live.message && this.live.message.entryId && this.entries.has(this.live.message.entryId)) {
      this.live.message = null;
    }
  }

  applyState(state) {
    this.state = { pending: EMPTY_QUEUES, ...state };
    this.approvals = new Map((state.approvals || []).map((a) => [a.id, a]));
    if (state.leafEntryId) {
      this.leaf = state.leafEntryId;
      this.exists = true;
    }
  }

  // The conversation on the current branch: the leaf and its ancestors, oldest first.
  path() {
    const out = [];
    const seen = new Set();
    let id = this.leaf;
    while (id && this.entries.has(id) && !seen.has(id)) {
      seen.add(id);
      const entry = this.entries.get(id);
      out.push(entry);
      id = entry.parentId;
    }
    return out.reverse();
  }

  // --- live events -----------------------------------------------------------------------------

  handle(event) {
    const data = event.data || {};
    const live = this.live;
    switch (event.type) {
      case "run_started":
        this.state.status = "running";
        this.state.activeRunId = event.runId;
        this.live = emptyLive();
        this.notice = null;
        this.exists = true;
        break;
      case "user_message":
        this.sync();
        break;
      case "message_started":
        live.message = { text: "", thinking: "", late: false };
        break;
      case "message_delta":
        if (!live.message) live.message = { text: "", thinking: "", late: true };
        if (data.channel === "thinking") live.message.thinking += data.delta;
        else live.message.text += data.delta;
        break;
      case "message_finished":
        if (live.message) live.message.entryId = data.entryId;
        this.sync();
        break;
      case "tool_started":
        live.tools.set(data.id, { name: data.name, args: data.args, status: "running" });
        live.notice = null;
        break;
      case "tool_progress": {
        const tool = live.tools.get(data.id) || { name: data.name, status: "running" };
        tool.partial = data.partialResult;
        live.tools.set(data.id, tool);
        break;
      }
      case "tool_finished": {
        const tool = live.tools.get(data.id) || { status: "running" };
        Object.assign(tool, { status: data.isError ? "error" : "done", content: data.content });
        live.tools.set(data.id, tool);
        this.sync();
        break;
      }
      case "approval_requested":
        this.approvals.set(data.id, data);
        break;
      case "approval_resolved":
        this.approvals.delete(data.id);
        break;
      case "queue_changed":
        this.state.pending = data;
        break;
      case "retry_scheduled":
      case "model_retry_scheduled":
        live.notice = `Retrying in ${Math.round((data.delayMs || 0) / 100) / 10} s (attempt ${data.attempt} of ${data.maxAttempts}): ${data.error}`;
        break;
      case "compaction_started":
        if (!event.runId) this.state.status = "compacting";
        live.notice = "Compacting the conversation…";
        break;
      case "compaction_finished":
        live.notice = null;
        if (!event.runId) this.state.status = "idle";
        if (data.error) this.notice = { kind: "error", text: `Compaction failed: ${data.error}` };
        else if (data.aborted) this.notice = { kind: "info", text: "Compaction stopped." };
        this.sync();
        break;
      case "state_changed":
        // Only the fields that changed are sent: the others keep their values.
        for (const key of ["name", "model", "thinkingLevel"]) {
          if (key in data) this.state[key] = data[key] ?? undefined;
        }
        if (data.leafEntryId && data.leafEntryId !== this.leaf) this.leaf = data.leafEntryId;
        this.exists = true;
        this.hooks.onStateChanged();
        this.sync();
        break;
      case "run_settled":
        this.state.status = "idle";
        this.state.activeRunId = undefined;
        this.state.pending = EMPTY_QUEUES;
        if (data.status === "failed") {
          const text = (data.error && data.error.message) || "The run failed.";
          // the engine's refusal of a conversation that no longer fits recommends compacting it
          this.notice = { kind: "error", text, offerCompact: text.includes("compact this one") };
        } else if (data.status === "aborted") {
          this.notice = { kind: "info", text: "Stopped." };
        }
        this.sync().then(() => {
          this.live = emptyLive();
          this.refreshState();
          this.changed();
        });
        this.hooks.onSettled();
        break;
      case "serving_error":
        this.notice = { kind: "error", text: data.message };
        break;
      default:
        return; // a type this page does not know: ignored, as the protocol asks
    }
    this.changed();
  }

  async refreshState() {
    try {
      const state = await api.state(this.id);
      if (!this.running || state.status !== "idle") this.applyState(state);
      this.changed();
    } catch (error) {
      if (error instanceof Unauthorized) this.hooks.onUnauthorized();
    }
  }

  changed() {
    if (this.closed) return;
    try {
      this.hooks.onChange(this);
    } catch (error) {
      console.error("rendering failed", error); // a page bug must not cost the connection
    }
  }
}

function emptyLive() {
  return { message: null, tools: new Map(), notice: null };
}

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
