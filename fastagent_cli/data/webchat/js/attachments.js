// Images and PDFs attached to the next message: the paperclip button (a file picker), a paste, or a
// drop on the message box add them; each shows as a chip above the box (a thumbnail for an image, a
// document icon and the file name for a PDF), removable (×) until the message is sent. They go
// with it as the contract's images ({mimeType, data} base64) and documents ({mimeType, data, name}).
//
// A request body is capped at 1 MiB with base64 counted (docs/control-plane.md). A PDF goes whole
// (never shrunk), so one that cannot fit is refused as it is added, saying so; at send time the
// images share what the text and the PDFs leave, each fitted here first: at most 1568 px on its
// longest side (as the engine fits them) and within its share, re-encoded as JPEG at falling
// quality, then smaller, when it does not fit as it is. The engine fits them again on the server.

import { icon } from "./icons.js";

export const MAX_BODY = 1 << 20;
export const MAX_SIDE = 1568;
export const MAX_IMAGES = 20;
export const MAX_DOCUMENTS = 10;
const PDF_MAGIC = "JVBERi0"; // "%PDF-" in base64
const ROOM = MAX_BODY - 2048; // the body's fields and the JSON around the files

const isPdf = (file) => file.type === "application/pdf" || /\.pdf$/i.test(file.name || "");
const base64Size = (bytes) => Math.ceil(bytes / 3) * 4;
const megabytes = (bytes) => `${(bytes / 1e6).toFixed(1)} MB`;
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

  get documents() {
    return this.items.filter((item) => item.kind === "document");
  }

  get images() {
    return this.items.filter((item) => item.kind === "image");
  }

  // A paste that carries image or PDF files attaches them; a text paste is left to the box.
  paste(event) {
    const files = [...(event.clipboardData?.items || [])]
      .filter((item) => item.kind === "file" && (item.type.startsWith("image/") || item.type === "application/pdf"))
      .map((item) => item.getAsFile())
      .filter(Boolean);
    if (!files.length) return;
    event.preventDefault();
    this.addFiles(files);
  }

  async addFiles(files) {
    for (const file of files) {
      if (isPdf(file)) {
        await this.addPdf(file);
        continue;
      }
      if (!file.type.startsWith("image/")) {
        this.onError(`${file.name || "that file"} is neither an image nor a PDF: only those can be attached here`);
        continue;
      }
      if (this.images.length >= MAX_IMAGES) {
        this.onError(`at most ${MAX_IMAGES} images go with one message`);
        break;
      }
      try {
        const url = await readDataUrl(file);
        const name = file.name && file.name !== "image.png" ? file.name : `pasted-${this.next}.${file.type.split("/")[1] || "png"}`;
        this.items.push({ id: this.next++, kind: "image", file, name, url });
      } catch (error) {
        this.onError(`${file.name}: ${error.message}`);
      }
    }
    this.render();
  }

  // A PDF goes whole: refused here when it cannot fit in a message's body beside those attached.
  async addPdf(file) {
    const name = file.name || `document-${this.next}.pdf`;
    if (this.documents.length >= MAX_DOCUMENTS) {
      this.onError(`at most ${MAX_DOCUMENTS} PDFs go with one message`);
      return;
    }
    const taken = this.documents.reduce((sum, item) => sum + item.data.length, 0);
    const size = base64Size(file.size);
    if (taken + size > ROOM) {
      const left = taken ? ` beside the ${megabytes(taken)} of PDFs already attached` : "";
      this.onError(
        `${name} is too large to send: a message carries at most 1 MiB with its files as base64, ` +
          `and this PDF is ${megabytes(size)} as base64${left} (PDFs are not shrunk: send its text, or use fastagent invoke --attach)`,
      );
      return;
    }
    try {
      const { data } = splitDataUrl(await readDataUrl(file));
      if (!data.startsWith(PDF_MAGIC)) {
        this.onError(`${name} is not a PDF (it does not start with %PDF-)`);
        return;
      }
      this.items.push({ id: this.next++, kind: "document", file, name, data });
    } catch (error) {
      this.onError(`${name}: ${error.message}`);
    }
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

  // {images, documents} for the body: the PDFs as they are, the images fitted to share what the
  // body leaves after `text` and the PDFs (throws saying which one cannot go).
  async encode(text) {
    const documents = this.documents.map((item) => ({ mimeType: "application/pdf", data: item.data, name: item.name }));
    const pdfs = documents.reduce((sum, item) => sum + item.data.length + item.name.length + 64, 0);
    const room = ROOM - new TextEncoder().encode(JSON.stringify(text)).length - pdfs;
    if (room < 0) throw new Error(`the PDFs and the text are more than 1 MiB, the most a message carries: remove one`);
    const images = this.images;
    if (images.length && room < 4096 * images.length) {
      throw new Error("the PDFs leave no room for the images in one message: send them in two");
    }
    const budget = images.length ? Math.floor(room / images.length) - 64 : 0;
    const out = [];
    for (const item of images) out.push(await fitImage(item, budget));
    return { images: out, documents };
  }

  render() {
    this.list.hidden = !this.items.length;
    this.list.replaceChildren(
      ...this.items.map((item) => {
        const chip = el("div", `attachment ${item.kind}`);
        chip.dataset.attachmentId = String(item.id);
        chip.title = item.name;
        let thumb;
        if (item.kind === "document") {
          thumb = el("span", "attachment-doc");
          thumb.append(icon("document"));
          thumb.setAttribute("aria-label", `PDF ${item.name}`);
        } else {
          thumb = el("img", "attachment-thumb");
          thumb.alt = item.name;
          thumb.src = item.url;
        }
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
