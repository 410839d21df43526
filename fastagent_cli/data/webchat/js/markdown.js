// Markdown to DOM, safe by construction: every piece of text becomes a text node, never HTML.
//
// Blocks: fenced code (``` or ~~~, highlighted; an unclosed fence while streaming runs to the
// end), ATX headings, block quotes, bullet and numbered lists (nested by indentation), GFM tables,
// thematic breaks, paragraphs (a single newline is a line break, as chat text means it).
// Inlines: `code`, **strong**, *emphasis*, ~~strike~~, [links](https://...), <https://...>
// autolinks, bare https:// URLs. Links open in a new tab without a referrer; only http(s) and
// mailto are linked; a link's text holds no link (a URL there is text). Images are shown as links
// (the page loads nothing from elsewhere). A message that fails to render shows as plain text.

import { highlight } from "./highlight.js";

const FENCE = /^ {0,3}(`{3,}|~{3,})\s*([^`\s]*)[^`]*$/;
const HEADING = /^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$/;
const RULE = /^ {0,3}([-*_])(\s*\1){2,}\s*$/;
const QUOTE = /^ {0,3}>\s?(.*)$/;
const ITEM = /^(\s*)([-*+]|\d{1,9}[.)])\s+(.*)$/;
const TABLE_SEP = /^\s*\|?\s*:?-{1,}:?\s*(\|\s*:?-{1,}:?\s*)*\|?\s*$/;

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

const MAX_DEPTH = 24;

export function renderMarkdown(source) {
  const root = el("div", "md");
  try {
    renderBlocks(source.replace(/\r\n?/g, "\n").split("\n"), root, 0);
  } catch (error) {
    // one message the renderer cannot take shows as its text; the transcript goes on
    console.warn("markdown: showing a message as plain text:", error);
    const plain = el("div", "md md-plain");
    plain.append(el("p", "", source));
    return plain;
  }
  return root;
}

function renderBlocks(lines, parent, depth) {
  if (depth > MAX_DEPTH) throw new Error("nested too deeply");
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    if (!line.trim()) {
      i += 1;
      continue;
    }
    const fence = FENCE.exec(line);
    if (fence) {
      const close = new RegExp(`^ {0,3}${fence[1][0]}{${fence[1].length},}\\s*$`);
      const body = [];
      i += 1;
      while (i < lines.length && !close.test(lines[i])) body.push(lines[i++]);
      i += 1;
      parent.append(codeBlock(body.join("\n"), fence[2]));
      continue;
    }
    const heading = HEADING.exec(line);
    if (heading) {
      const node = el(`h${Math.min(heading[1].length + 2, 6)}`);
      inline(heading[2], node);
      parent.append(node);
      i += 1;
      continue;
    }
    if (RULE.test(line)) {
      parent.append(el("hr"));
      i += 1;
      continue;
    }
    if (QUOTE.test(line)) {
      const body = [];
      while (i < lines.length && lines[i].trim() && QUOTE.test(lines[i])) body.push(QUOTE.exec(lines[i++])[1]);
      const node = el("blockquote");
      renderBlocks(body, node, depth + 1);
      parent.append(node);
      continue;
    }
    if (ITEM.test(line)) {
      i = list(lines, i, parent, depth);
      continue;
    }
    if (line.includes("|") && i + 1 < lines.length && TABLE_SEP.test(lines[i + 1]) && lines[i + 1].includes("-")) {
      i = table(lines, i, parent);
      continue;
    }
    const body = [];
    while (i < lines.length && lines[i].trim() && !startsBlock(lines, i)) body.push(lines[i++].trim());
    if (!body.length) body.push(lines[i++].trim());
    const para = el("p");
    body.forEach((text, n) => {
      if (n) para.append(el("br"));
      inline(text, para);
    });
    parent.append(para);
  }
}

function startsBlock(lines, i) {
  const line = lines[i];
  return (
    FENCE.test(line) ||
    HEADING.test(line) ||
    RULE.test(line) ||
    QUOTE.test(line) ||
    ITEM.test(line) ||
    (line.includes("|") && i + 1 < lines.length && TABLE_SEP.test(lines[i + 1]) && lines[i + 1].includes("-"))
  );
}

function list(lines, start, parent, depth) {
  const first = ITEM.exec(lines[start]);
  const indent = first[1].length;
  const ordered = /\d/.test(first[2]);
  const node = el(ordered ? "ol" : "ul");
  if (ordered && parseInt(first[2], 10) !== 1) node.start = parseInt(first[2], 10);
  let i = start;
  let item = null;
  while (i < lines.length) {
    const line = lines[i];
    const match = ITEM.exec(line);
    if (match && match[1].length === indent && /\d/.test(match[2]) === ordered) {
      item = [match[3]];
      node.append(listItem(item, depth));
      i += 1;
      continue;
    }
    const deeper = line.length - line.trimStart().length > indent;
    if (item && line.trim() && (deeper || (!match && !startsBlock(lines, i)))) {
      item.push(line.slice(Math.min(indent + 2, line.length - line.trimStart().length)));
      node.lastChild.replaceWith(listItem(item, depth));
      i += 1;
      continue;
    }
    if (!line.trim() && i + 1 < lines.length && lines[i + 1].length - lines[i + 1].trimStart().length > indent && item) {
      item.push("");
      i += 1;
      continue;
    }
    break;
  }
  parent.append(node);
  return i;
}

function listItem(lines, depth) {
  const li = el("li");
  const task = /^\[([ xX])\]\s+/.exec(lines[0]);
  if (task) {
    const box = el("input");
    box.type = "checkbox";
    box.disabled = true;
    box.checked = task[1] !== " ";
    li.append(box, " ");
    lines = [lines[0].slice(task[0].length), ...lines.slice(1)];
  }
  if (lines.length === 1) inline(lines[0], li);
  else renderBlocks(lines, li, depth + 1);
  return li;
}

function cells(line) {
  let text = line.trim();
  if (text.startsWith("|")) text = text.slice(1);
  if (text.endsWith("|") && !text.endsWith("\\|")) text = text.slice(0, -1);
  return text.split(/(?<!\\)\|/).map((cell) => cell.trim().replace(/\\\|/g, "|"));
}

function table(lines, start, parent) {
  const head = cells(lines[start]);
  const aligns = cells(lines[start + 1]).map((c) =>
    c.startsWith(":") && c.endsWith(":") ? "center" : c.endsWith(":") ? "right" : c.startsWith(":") ? "left" : "",
  );
  const wrap = el("div", "table-wrap");
  const node = el("table");
  const row = el("tr");
  head.forEach((text, n) => {
    const th = el("th");
    if (aligns[n]) th.style.textAlign = aligns[n];
    inline(text, th);
    row.append(th);
  });
  const thead = el("thead");
  thead.append(row);
  node.append(thead);
  const body = el("tbody");
  let i = start + 2;
  while (i < lines.length && lines[i].trim() && lines[i].includes("|")) {
    const tr = el("tr");
    cells(lines[i]).forEach((text, n) => {
      if (n >= head.length) return;
      const td = el("td");
      if (aligns[n]) td.style.textAlign = aligns[n];
      inline(text, td);
      tr.append(td);
    });
    body.append(tr);
    i += 1;
  }
  node.append(body);
  wrap.append(node);
  parent.append(wrap);
  return i;
}

export function codeBlock(code, language) {
  const wrap = el("div", "code");
  const bar = el("div", "code-bar");
  bar.append(el("span", "code-lang", language || "text"));
  const copy = el("button", "code-copy", "Copy");
  copy.type = "button";
  copy.addEventListener("click", () => {
    const done = () => {
      copy.textContent = "Copied";
      setTimeout(() => (copy.textContent = "Copy"), 1200);
    };
    if (navigator.clipboard) navigator.clipboard.writeText(code).then(done, () => {});
  });
  bar.append(copy);
  const pre = el("pre");
  const node = el("code");
  if (language) node.dataset.lang = language.toLowerCase();
  highlight(code, language, node);
  pre.append(node);
  wrap.append(bar, pre);
  return wrap;
}

// --- inlines ---------------------------------------------------------------------------------

const INLINE =
  /(`+)([\s\S]*?[^`])\1(?!`)|\*\*(?=\S)([\s\S]*?\S)\*\*|__(?=\S)([\s\S]*?\S)__|~~(?=\S)([\s\S]*?\S)~~|\*(?=[^\s*])([\s\S]*?[^\s*])\*|(?<![\w])_(?=[^\s_])([\s\S]*?[^\s_])_(?![\w])|!?\[([^\]]*)\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)|(https?:\/\/[^\s<>()]*[^\s<>().,;:!?'"\]])|\\([\\`*_{}[\]()#+\-.!|~>])|<((?:https?:\/\/|mailto:)[^\s<>]+)>/;

function safeHref(url) {
  return /^(https?:|mailto:)/i.test(url) ? url : null;
}

// ``inLink``: inside a link's text, where links are text (no link nests in a link, and a URL as
// its own text must not be linked again, endlessly).
function link(text, href, parent, inLink, depth) {
  const safe = safeHref(href);
  if (!safe || inLink) {
    inline(text || href, parent, inLink, depth + 1);
    return;
  }
  const a = el("a");
  a.href = safe;
  a.target = "_blank";
  a.rel = "noopener noreferrer";
  inline(text || safe, a, true, depth + 1);
  parent.append(a);
}

export function inline(text, parent, inLink = false, depth = 0) {
  if (depth > MAX_DEPTH) throw new Error("nested too deeply");
  let rest = text;
  while (rest) {
    const m = INLINE.exec(rest);
    if (!m) {
      parent.append(rest);
      return;
    }
    if (m.index) parent.append(rest.slice(0, m.index));
    const inner = (tag, body) => inline(body, parent.appendChild(el(tag)), inLink, depth + 1);
    if (m[1] !== undefined) parent.append(el("code", "inline", m[2].replace(/^ (.*) $/, "$1")));
    else if (m[3] !== undefined) inner("strong", m[3]);
    else if (m[4] !== undefined) inner("strong", m[4]);
    else if (m[5] !== undefined) inner("del", m[5]);
    else if (m[6] !== undefined) inner("em", m[6]);
    else if (m[7] !== undefined) inner("em", m[7]);
    else if (m[9] !== undefined) link(m[8], m[9], parent, inLink, depth);
    else if (m[10] !== undefined) {
      if (inLink) parent.append(m[10]);
      else link(m[10], m[10], parent, inLink, depth);
    } else if (m[11] !== undefined) parent.append(m[11]);
    else if (m[12] !== undefined) {
      if (inLink) parent.append(m[12]);
      else link(m[12], m[12], parent, inLink, depth);
    }
    rest = rest.slice(m.index + m[0].length);
  }
}
