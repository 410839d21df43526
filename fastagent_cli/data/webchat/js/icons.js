// Line icons as inline SVG (no icon font: the page must look the same on a machine without one).

const PATHS = {
  rename: "M4 20h4L19 9l-4-4L4 16v4zM14 6l4 4",
  fork: "M7 4v10M7 14a3 3 0 1 0 0 6 3 3 0 0 0 0-6zM7 4a2 2 0 1 0 0 .01M17 4a2 2 0 1 0 0 .01M17 6v2a4 4 0 0 1-4 4H9a2 2 0 0 0-2 2",
  delete: "M5 7h14M10 7V4h4v3M7 7l1 13h8l1-13M10 11v6M14 11v6",
  menu: "M4 7h16M4 12h16M4 17h16",
  attach: "M21 11l-8.5 8.5a5 5 0 0 1-7-7L14 4a3.5 3.5 0 0 1 5 5l-8.5 8.5a2 2 0 0 1-3-3L15 7",
  document: "M14 3H6v18h12V7l-4-4zM14 3v4h4M9 12h6M9 16h6",
};

export function icon(name) {
  const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  svg.setAttribute("viewBox", "0 0 24 24");
  svg.setAttribute("width", "16");
  svg.setAttribute("height", "16");
  svg.setAttribute("aria-hidden", "true");
  svg.classList.add("svg-icon");
  const path = document.createElementNS("http://www.w3.org/2000/svg", "path");
  path.setAttribute("d", PATHS[name]);
  svg.append(path);
  return svg;
}
