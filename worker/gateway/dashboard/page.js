// The dashboard's documents: the login page, the dashboard's shell (its numbers are filled in by
// client.js from the data endpoint), the script and the style sheet, each with headers that allow
// nothing the page does not need. No document holds data or a secret: the shell is the same for
// everyone, and what varies (the base path, an error message) is escaped.
import { dashboardClient } from "./client.js";

// Scripts and styles only from this origin (no inline code: client.js is served as a file), data only
// from this origin, forms only to it, and no framing.
export const CONTENT_SECURITY_POLICY =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/** The headers of every dashboard response. @param {string} contentType @returns {Record<string, string>} */
export function securityHeaders(contentType) {
  return {
    "content-type": contentType,
    "content-security-policy": CONTENT_SECURITY_POLICY,
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "referrer-policy": "no-referrer",
    "cross-origin-opener-policy": "same-origin",
    "cross-origin-resource-policy": "same-origin",
    "cache-control": "no-store",
  };
}

const escapeHtml = (/** @type {unknown} */ text) => String(text).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** @param {string} base @param {string} title @param {string} body @returns {string} */
function page(base, title, body) {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<link rel="stylesheet" href="${escapeHtml(base)}/app.css">
<link rel="icon" href="${escapeHtml(base)}/icon.svg" type="image/svg+xml">
</head>
<body>
${body}
</body>
</html>
`;
}

/** The login form; `problem` (a fixed sentence of serve.js) is shown above it. @param {string} base @param {string} problem @returns {string} */
export function loginPage(base, problem = "") {
  return page(
    base,
    "sluice: sign in",
    `<main class="login">
<h1>sluice</h1>
<p>The deployment's rate-limit dashboard. Sign in with the admin token (the Worker secret named by <code>admin.tokenSecret</code>).</p>
${problem === "" ? "" : `<p class="problem" role="alert">${escapeHtml(problem)}</p>`}
<form method="post" action="${escapeHtml(base)}/login">
<label for="token">Admin token</label>
<input id="token" name="token" type="password" autocomplete="current-password" required minlength="32">
<button type="submit">Sign in</button>
</form>
</main>`,
  );
}

/** The dashboard's shell: client.js fills #content. @param {string} base @returns {string} */
export function dashboardPage(base) {
  return page(
    base,
    "sluice: dashboard",
    `<header>
<h1>sluice</h1>
<form method="post" action="${escapeHtml(base)}/logout"><button type="submit">Sign out</button></form>
</header>
<main id="dashboard" data-base="${escapeHtml(base)}">
<p id="status" role="status"></p>
<div id="content"><p>Loading the deployment's counters...</p></div>
</main>
<script src="${escapeHtml(base)}/app.js"></script>`,
  );
}

/** The script the shell loads. */
export const CLIENT_SCRIPT = `"use strict";\n(${dashboardClient.toString()})();\n`;

/** The page's icon: a sluice gate, so the browser asks for nothing outside the dashboard's path. */
export const ICON = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><rect width="16" height="16" rx="3" fill="#1c7ed6"/><path d="M3 11h10M5 4v7M11 4v7" stroke="#fff" stroke-width="2"/></svg>`;

export const STYLE_SHEET = `
:root { color-scheme: light dark; font-family: system-ui, sans-serif; }
body { margin: 0 auto; max-width: 72rem; padding: 1rem 1.5rem; }
header { display: flex; justify-content: space-between; align-items: center; }
h1 { font-size: 1.4rem; margin: 0.5rem 0; }
table { border-collapse: collapse; width: 100%; margin: 1.25rem 0; font-size: 0.9rem; }
caption { text-align: left; font-weight: 600; padding: 0.3rem 0; }
th, td { border-bottom: 1px solid #8884; padding: 0.3rem 0.5rem; text-align: left; vertical-align: middle; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
td.key { font-family: ui-monospace, monospace; }
.spark { fill: none; stroke: #d9480f; stroke-width: 1.5; }
.empty { color: #888; }
.problem { color: #c92a2a; }
.login { max-width: 26rem; margin-top: 4rem; }
.login form { display: grid; gap: 0.5rem; }
input, button { font: inherit; padding: 0.4rem 0.6rem; }
`;
