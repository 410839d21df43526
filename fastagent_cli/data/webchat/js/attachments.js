// Images attached to the next message: the paperclip button (a file picker), a paste, or a drop on the
// message box add them; each shows as a thumbnail chip above the box, removable (×) until the
// message is sent. They go with it as the contract's images ({mimeType, data} base64).
//
// A request body is capped at 1 MiB with base64 counted (docs/control-plane.md), so at send time
// each image is fitted here first: at most 1568 px on its longest side (as the engine fits them)
// and within its share of the body, re-encoded as JPEG at falling quality, then smaller, when it
// does not fit as it is. The engine fits them again on the server, whatever sent them.

export const MAX_BODY = 1 << 20;
export const MAX_SIDE = 1568;
export const MAX_IMAGES = 20;
const KEPT_TYPES = ["image/png", "image/jpeg", "image/gif", "image/webp"];
const QUALITIES = [0.85, 0.7, 0.55, 0.4];

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function readDataUrl(blob) {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(reader.result);
    reader.onerror = () => reject(reader.error || new Error("the file could not be read"));
    reader.readAsDataURL(blob);
  });
}

function splitDataUrl(url) {
  const comma = url.indexOf(",");
  return { mimeType: url.slice(5, url.indexOf(";")), data: url.slice(comma + 1) };
}

function canvasBlob(canvas, type, quality) {
  return new Promise((resolve) => canvas.toBlob(resolve, type, quality));
}

// The image within MAX_SIDE and `budget` base64 characters, as {mimeType, data}.
export async function fitImage(item, budget) {
  const { mimeType, data } = splitDataUrl(item.url);
  const bitmap = await createImageBitmap(item.file).catch(() => null);
  if (!bitmap) {
    // a format this browser does not draw (HEIC): sent as it is, the server converts it
    if (data.length <= budget) return { mimeType: item.file.type || mimeType, data };
    throw new Error(`${item.name} is too large to send (and this browser cannot shrink it)`);
  }
  let scale = Math.min(1, MAX_SIDE / Math.max(bitmap.width, bitmap.height));
  if (scale === 1 && KEPT_TYPES.includes(mimeType) && data.length <= budget) {
    bitmap.close();
    return { mimeType, data };
  }
  const canvas = document.createElement("canvas");
  try {
    for (let round = 0; round < 12; round += 1) {
      canvas.width = Math.max(1, Math.round(bitmap.width * scale));
      canvas.height = Math.max(1, Math.round(bitmap.height * scale));
      const context = canvas.getContext("2d");
      context.fillStyle = "#fff"; // JPEG has no transparency: what was clear becomes white
      context.fillRect(0, 0, canvas.width, canvas.height);
      context.drawImage(bitmap, 0, 0, canvas.width, canvas.height);
      const types = mimeType === "image/png" && round === 0 ? ["image/png", "image/jpeg"] : ["image/jpeg"];
      for (const type of types) {
        for (const quality of type === "image/png" ? [undefined] : QUALITIES) {
          const blob = await canvasBlob(canvas, type, quality);
          if (!blob) continue;
          const fitted = splitDataUrl(await readDataUrl(blob));
          if (fitted.data.length <= budget) return fitted;
        }
      }
      scale *= 0.75;
    }
  } finally {
    bitmap.close();
  }
  throw new Error(`${item.name} could not be made small enough to send`);
}

export class Attachments {
  // list: the chips' container; picker: an <input type=file>; onError(text): a toast
  constructor({ list, picker, button, input, dropZone, onError }) {
    this.list = list;
    this.picker = picker;
    this.onError = onError;
    this.items = []; // {id, file, name, url}
    this.next = 1;
    button.addEventListener("click", () => picker.click());
    picker.addEventListener("change", () => {
      this.addFiles([...picker.files]);
      picker.value = ""; // the same file can be picked again
    });
    input.addEventListener("paste", (event) => this.paste(event));
    dropZone.addEventListener("dragover", (event) => {
      if ([...(event.dataTransfer?.items || [])].some((i) => i.kind === "file")) event.preventDefault();
    });
    dropZone.addEventListener("drop", (event) => {
      const files = [...(event.dataTransfer?.files || [])];
      if (!files.length) return;
      event.preventDefault();
      this.addFiles(files);
    });
  }

  get count() {
    return this.items.length;
  }

  // A paste that carries image files attaches them; a text paste is left to the box.
  paste(event) {
    const files = [...(event.clipboardData?.items || [])]
      .filter((item) => item.kind === "file" && item.type.startsWith("image/"))
      .map((item) => item.getAsFile())
      .filter(Boolean);
    if (!files.length) return;
    event.preventDefault();
    this.addFiles(files);
  }

  async addFiles(files) {
    for (const file of files) {
      if (!file.type.startsWith("image/")) {
        this.onError(`${file.name || "that file"} is not an image: only images can be attached here`);
        continue;
      }
      if (this.items.length >= MAX_IMAGES) {
        this.onError(`at most ${MAX_IMAGES} images go with one message`);
        break;
      }
      try {
        const url = await readDataUrl(file);
        const name = file.name && file.name !== "image.png" ? file.name : `pasted-${this.next}.${file.type.split("/")[1] || "png"}`;
        this.items.push({ id: this.next++, file, name, url });
      } catch (error) {
        this.onError(`${file.name}: ${error.message}`);
      }
    }
    this.render();
  }

  remove(id) {
    this.items = this.items.filter((item) => item.id !== id);
    this.render();
  }

  // Everything attached, taken off the box (restore() puts it back when the send is refused).
  take() {
    const taken = this.items;
    this.items = [];
    this.render();
    return taken;
  }

  restore(items) {
    this.items = items;
    this.render();
  }

  // The images fitted to share what the body leaves after `text` (throws saying which one cannot).
  async encode(text) {
    if (!this.items.length) return [];
    const room = MAX_BODY - new TextEncoder().encode(JSON.stringify(text)).length - 1024;
    const budget = Math.floor(room / this.items.length) - 64;
    const out = [];
    for (const item of this.items) out.push(await fitImage(item, budget));
    return out;
  }

  render() {
    this.list.hidden = !this.items.length;
    this.list.replaceChildren(
      ...this.items.map((item) => {
        const chip = el("div", "attachment");
        chip.dataset.attachmentId = String(item.id);
        chip.title = item.name;
        const thumb = el("img", "attachment-thumb");
        thumb.alt = item.name;
        thumb.src = item.url;
        const remove = el("button", "attachment-remove", "×");
        remove.type = "button";
        remove.title = `Remove ${item.name}`;
        remove.setAttribute("aria-label", `Remove ${item.name}`);
        remove.addEventListener("click", () => this.remove(item.id));
        chip.append(thumb, el("span", "attachment-name", item.name), remove);
        return chip;
      }),
    );
  }
}
