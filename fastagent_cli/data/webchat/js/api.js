// The control plane over fetch: the bearer token, JSON calls, and the session event stream.
//
// The token arrives once in the address's fragment (/#token=...), which browsers never send to
// a server; it moves to this tab's session storage and leaves the address bar at once. Every
// call carries it as "Authorization: Bearer"; EventSource cannot send headers, so the event
// stream is read with fetch too. Paths are relative, so the page also works below a proxy prefix.

const TOKEN_KEY = "fastagent.controlToken";

export class Unauthorized extends Error {
  constructor() {
    super("the control token was refused");
  }
}

export class HttpError extends Error {
  constructor(status, text) {
    super(text.trim() || `HTTP ${status}`);
    this.status = status;
  }
}

export const token = {
  get: () => sessionStorage.getItem(TOKEN_KEY),
  set: (value) => sessionStorage.setItem(TOKEN_KEY, value),
  clear: () => sessionStorage.removeItem(TOKEN_KEY),
};

// Reads the fragment's parameters (token, s), keeps the token and rewrites the address without it.
export function readAddress() {
  const params = new URLSearchParams(location.hash.slice(1));
  const given = params.get("token");
  if (given) {
    token.set(given);
    params.delete("token");
    const rest = params.toString();
    history.replaceState(null, "", location.pathname + location.search + (rest ? `#${rest}` : ""));
  }
  return { session: params.get("s") };
}

export function showSessionInAddress(id) {
  const hash = id ? `#s=${encodeURIComponent(id)}` : "";
  history.replaceState(null, "", location.pathname + location.search + hash);
}

const enc = encodeURIComponent;

async function call(method, path, body) {
  const headers = { Authorization: `Bearer ${token.get() || ""}` };
  const init = { method, headers, cache: "no-store" };
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(path, init);
  if (response.status === 401) throw new Unauthorized();
  const type = response.headers.get("Content-Type") || "";
  if (type.startsWith("application/json")) {
    const value = await response.json();
    if (!response.ok) throw new HttpError(response.status, (value.error && value.error.message) || "");
    return value;
  }
  throw new HttpError(response.status, await response.text());
}

export const api = {
  capabilities: () => call("GET", "control/capabilities"),
  commands: () => call("GET", "control/commands"),
  sessions: () => call("GET", "control/sessions"),
  state: (id) => call("GET", `control/sessions/${enc(id)}`),
  entries: (id, since) => call("GET", `control/sessions/${enc(id)}/entries${since ? `?since=${enc(since)}` : ""}`),
  update: (id, patch) => call("PATCH", `control/sessions/${enc(id)}`, patch),
  fork: (into, from, at) => call("PUT", `control/sessions/${enc(into)}`, { from, at }),
  remove: (id) => call("DELETE", `control/sessions/${enc(id)}`),
  action: (id, action) => call("POST", `control/sessions/${enc(id)}/actions`, action),
  answer: (id, approval, decision, reason) =>
    call("POST", `control/sessions/${enc(id)}/approvals/${enc(approval)}`, { decision, reason: reason || undefined, by: "web chat" }),
  // Starts a run the server keeps going without this page (a reload does not stop it).
  invoke: (id, text, images, documents) =>
    call("POST", "control/invoke", {
      session: id,
      text,
      images: images?.length ? images : undefined,
      documents: documents?.length ? documents : undefined,
      detach: true,
    }),
};

// Opens the session's event stream; resolves once subscribed (the response headers arrived),
// with an async iterator of envelopes ({sessionId, epoch, seq, event}) and {ping: true} for the
// server's keep-alive comments. Ends when the server ends the stream; throws when it breaks.
export async function openEvents(id, signal) {
  const response = await fetch(`control/sessions/${enc(id)}/events`, {
    headers: { Authorization: `Bearer ${token.get() || ""}`, Accept: "text/event-stream" },
    cache: "no-store",
    signal,
  });
  if (response.status === 401) throw new Unauthorized();
  if (!response.ok || !response.body) throw new HttpError(response.status, await response.text());
  return readMessages(response.body.pipeThrough(new TextDecoderStream()).getReader());
}

async function* readMessages(reader) {
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value.replace(/\r\n?/g, "\n");
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const message = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      const data = [];
      let comment = false;
      for (const line of message.split("\n")) {
        if (line.startsWith("data:")) data.push(line.slice(line[5] === " " ? 6 : 5));
        else if (line.startsWith(":")) comment = true;
      }
      if (data.length) yield JSON.parse(data.join("\n"));
      else if (comment) yield { ping: true };
    }
  }
}
