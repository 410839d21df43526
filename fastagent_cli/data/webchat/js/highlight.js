// A small syntax highlighter: comments, strings, numbers, keywords, literals, function names and
// types, for the languages agents write most. Output is text nodes inside <span class="t-*">;
// nothing is parsed as HTML. An unknown language is shown plain.

const words = (text) => new Set(text.split(/\s+/).filter(Boolean));

const C_LIKE_COMMENTS = [/\/\/[^\n]*/y, /\/\*[\s\S]*?(?:\*\/|$)/y];
const QUOTED = [/"(?:[^"\\\n]|\\.)*"?/y, /'(?:[^'\\\n]|\\.)*'?/y];
const NUMBER = /(?:0[xob][\da-f_]+|\d[\d_]*(?:\.\d[\d_]*)?(?:e[+-]?\d+)?)[a-z]*\b/iy;

const LANGUAGES = {
  python: {
    comments: [/#[^\n]*/y],
    strings: [/[rbfu]{0,2}"""[\s\S]*?(?:"""|$)/iy, /[rbfu]{0,2}'''[\s\S]*?(?:'''|$)/iy, /[rbfu]{0,2}"(?:[^"\\\n]|\\.)*"?/iy, /[rbfu]{0,2}'(?:[^'\\\n]|\\.)*'?/iy],
    keywords: words(
      "and as assert async await break class continue def del elif else except finally for from global if import in is lambda nonlocal not or pass raise return try while with yield match case type",
    ),
    literals: words("True False None self cls"),
    decorators: true,
  },
  javascript: {
    comments: C_LIKE_COMMENTS,
    strings: [...QUOTED, /`(?:[^`\\]|\\.)*`?/y],
    keywords: words(
      "async await break case catch class const continue debugger default delete do else export extends finally for from function if import in instanceof let new of return static super switch this throw try typeof var void while with yield interface type enum implements private public protected readonly declare namespace abstract as satisfies keyof",
    ),
    literals: words("true false null undefined NaN Infinity"),
  },
  bash: {
    comments: [/#[^\n]*/y],
    strings: [/"(?:[^"\\]|\\.)*"?/y, /'[^']*'?/y],
    keywords: words("if then else elif fi for while until do done case esac in function return local export set unset shift exit source alias"),
    literals: words("true false"),
    variables: /\$(?:\{[^}\n]*\}?|[A-Za-z_][A-Za-z0-9_]*|[0-9@#?$!*-])/y,
  },
  go: {
    comments: C_LIKE_COMMENTS,
    strings: [...QUOTED, /`[^`]*`?/y],
    keywords: words(
      "break case chan const continue default defer else fallthrough for func go goto if import interface map package range return select struct switch type var",
    ),
    literals: words("true false nil iota"),
  },
  rust: {
    comments: C_LIKE_COMMENTS,
    strings: [/"(?:[^"\\]|\\.)*"?/y],
    keywords: words(
      "as async await break const continue crate dyn else enum extern fn for if impl in let loop match mod move mut pub ref return self Self static struct super trait type unsafe use where while",
    ),
    literals: words("true false None Some Ok Err"),
  },
  c: {
    comments: [...C_LIKE_COMMENTS, /#[a-z]+[^\n]*/y],
    strings: QUOTED,
    keywords: words(
      "auto break case char class const continue default delete do double else enum extern final float for goto if inline int long namespace new private protected public register return short signed sizeof static struct switch template this throw try typedef typename union unsigned using virtual void volatile while import package extends implements interface var val fun override object when is",
    ),
    literals: words("true false null nullptr NULL"),
  },
  sql: {
    comments: [/--[^\n]*/y, /\/\*[\s\S]*?(?:\*\/|$)/y],
    strings: [/'(?:[^']|'')*'?/y, /"[^"]*"?/y],
    keywords: words(
      "select from where and or not insert into values update set delete create table index view drop alter add primary key foreign references join left right inner outer on group by order having limit offset as distinct union all case when then else end is in like between exists returning with begin commit rollback default unique constraint",
    ),
    literals: words("null true false"),
    caseless: true,
  },
  yaml: {
    comments: [/#[^\n]*/y],
    strings: QUOTED,
    keys: /[A-Za-z_][\w.-]*(?=\s*:(?:\s|$))/y,
    keywords: words(""),
    literals: words("true false null yes no on off"),
  },
  toml: {
    comments: [/#[^\n]*/y],
    strings: [/"""[\s\S]*?(?:"""|$)/y, ...QUOTED],
    keys: /[A-Za-z_][\w.-]*(?=\s*=)/y,
    sections: /^\[[^\]\n]*\]/my,
    keywords: words(""),
    literals: words("true false"),
  },
  css: {
    comments: [/\/\*[\s\S]*?(?:\*\/|$)/y],
    strings: QUOTED,
    keys: /[a-z-]+(?=\s*:)/y,
    keywords: words("important media import from to"),
    literals: words(""),
  },
};
LANGUAGES.json = { comments: [], strings: [/"(?:[^"\\\n]|\\.)*"?/y], keywords: words(""), literals: words("true false null") };
const ALIASES = {
  py: "python", python3: "python", js: "javascript", jsx: "javascript", ts: "javascript", tsx: "javascript",
  typescript: "javascript", mjs: "javascript", sh: "bash", shell: "bash", zsh: "bash", console: "bash",
  golang: "go", rs: "rust", cpp: "c", "c++": "c", h: "c", hpp: "c", java: "c", cs: "c", csharp: "c",
  kotlin: "c", kt: "c", swift: "c", scss: "css", yml: "yaml", jsonc: "json", json5: "json",
  postgres: "sql", postgresql: "sql", sqlite: "sql", mysql: "sql",
};

function span(parent, kind, text) {
  const node = document.createElement("span");
  node.className = `t-${kind}`;
  node.textContent = text;
  parent.append(node);
}

function at(patterns, code, i) {
  for (const pattern of patterns) {
    pattern.lastIndex = i;
    const m = pattern.exec(code);
    if (m && m[0]) return m[0];
  }
  return null;
}

export function highlight(code, language, parent) {
  const name = (language || "").toLowerCase();
  if (name === "diff" || name === "patch") return diff(code, parent);
  if (name === "html" || name === "xml" || name === "svg") return markup(code, parent);
  const spec = LANGUAGES[ALIASES[name] || name];
  if (!spec) {
    parent.append(code);
    return;
  }
  let plain = "";
  const flush = () => {
    if (plain) parent.append(plain);
    plain = "";
  };
  let i = 0;
  while (i < code.length) {
    let found;
    const ch = code[i];
    const prev = i ? code[i - 1] : "";
    if ((found = at(spec.comments, code, i))) {
      flush();
      span(parent, "comment", found);
    } else if (spec.sections && (prev === "" || prev === "\n") && (found = at([spec.sections], code, i))) {
      flush();
      span(parent, "type", found);
    } else if (spec.keys && !/[\w-]/.test(prev) && (found = at([spec.keys], code, i))) {
      flush();
      span(parent, "key", found);
    } else if ((found = at(spec.strings, code, i))) {
      flush();
      span(parent, "string", found);
    } else if (spec.variables && (found = at([spec.variables], code, i))) {
      flush();
      span(parent, "variable", found);
    } else if (spec.decorators && ch === "@" && (prev === "" || prev === "\n" || /\s/.test(prev)) && (found = at([/@[\w.]+/y], code, i))) {
      flush();
      span(parent, "meta", found);
    } else if (/\d/.test(ch) && !/[\w.]/.test(prev) && (found = at([NUMBER], code, i))) {
      flush();
      span(parent, "number", found);
    } else if (/[A-Za-z_$]/.test(ch) && !/[\w$]/.test(prev)) {
      found = at([/[A-Za-z_$][\w$]*/y], code, i);
      const word = spec.caseless ? found.toLowerCase() : found;
      const next = code.slice(i + found.length).match(/^\s*(.)/);
      if (spec.keywords.has(word)) {
        flush();
        span(parent, "keyword", found);
      } else if (spec.literals.has(word)) {
        flush();
        span(parent, "literal", found);
      } else if (next && next[1] === "(") {
        flush();
        span(parent, "function", found);
      } else if (/^[A-Z][a-z0-9]+[A-Z]?\w*$/.test(found) && spec !== LANGUAGES.sql) {
        flush();
        span(parent, "type", found);
      } else {
        plain += found;
      }
    } else {
      plain += ch;
      i += 1;
      continue;
    }
    i += found.length;
  }
  flush();
}

function diff(code, parent) {
  code.split("\n").forEach((line, n) => {
    if (n) parent.append("\n");
    const kind = /^(\+\+\+|---)/.test(line)
      ? "meta"
      : line.startsWith("+")
        ? "inserted"
        : line.startsWith("-")
          ? "deleted"
          : line.startsWith("@@")
            ? "keyword"
            : null;
    if (kind) span(parent, kind, line);
    else parent.append(line);
  });
}

function markup(code, parent) {
  const TOKEN = /(<!--[\s\S]*?(?:-->|$))|(<\/?[\w:-]+)|("[^"]*"|'[^']*')|([\w:-]+)(?==)|(\/?>)/g;
  let last = 0;
  let inTag = false;
  for (const m of code.matchAll(TOKEN)) {
    if (m.index > last) parent.append(code.slice(last, m.index));
    if (m[1]) span(parent, "comment", m[1]);
    else if (m[2]) {
      span(parent, "keyword", m[2]);
      inTag = true;
    } else if (m[3] && inTag) span(parent, "string", m[3]);
    else if (m[4] && inTag) span(parent, "key", m[4]);
    else if (m[5]) {
      span(parent, "keyword", m[5]);
      inTag = false;
    } else parent.append(m[0]);
    last = m.index + m[0].length;
  }
  if (last < code.length) parent.append(code.slice(last));
}
