// The dashboard's paths, under admin.dashboard.path (default /_sluice/dashboard):
//   GET  <path>          the dashboard with a session, else the login form
//   POST <path>/login    the admin token from the form -> a session cookie (session.js), same origin only
//   POST <path>/logout   ends the session, same origin only
//   GET  <path>/data     the deployment's counters as JSON: with a session, or the admin bearer token
//   GET  <path>/app.js, <path>/app.css, <path>/icon.svg
// Like the metrics endpoint it fails closed: with no admin token configured (or one too short), every
// path but the assets answers 503. The token is only ever read from a POST body, never from a URL.
import { tokensEqual, MIN_TOKEN_LENGTH } from "../admin.js";
import { readBoundedBody } from "../../src/http/bounded-body.js";
import { GatewayError, errorResponse } from "../errors.js";
import { CLIENT_SCRIPT, ICON, STYLE_SHEET, dashboardPage, loginPage, securityHeaders } from "./page.js";
import { dashboardObject, redact } from "./report.js";
import { CLEARED_COOKIE, hasSession, newSessionCookie, sameOrigin } from "./session.js";

const BEARER = /^Bearer +(\S+) *$/i;
// A login form's body is a token of a few hundred bytes at most.
const MAX_LOGIN_BYTES = 4096;
// The most blocks in force the page lists (those ending soonest).
const MAX_SHOWN_BLOCKS = 100;

/**
 * Answers a request whose canonical path is the dashboard's `path` or below it.
 * @param {Request} request
 * @param {string} subpath What follows the dashboard's path ("" or "/login", ...).
 * @param {any} env
 * @param {{ path: string, tokenSecret: string, dashboard: { path: string, binding: string, showKeys?: boolean } }} admin
 * @param {{ nowMs: () => number, lockoutRules: readonly string[], reportNow: (env: any) => Promise<void>, blocksNow?: (env: any) => Promise<Array<{ rule: string, key: string, untilMs: number }>> }} hooks
 * @returns {Promise<Response>}
 */
export async function serveDashboard(request, subpath, env, admin, hooks) {
  const base = admin.dashboard.path;
  const method = request.method;
  if (subpath === "/app.js" && (method === "GET" || method === "HEAD")) return asset(CLIENT_SCRIPT, "text/javascript; charset=utf-8", method);
  if (subpath === "/app.css" && (method === "GET" || method === "HEAD")) return asset(STYLE_SHEET, "text/css; charset=utf-8", method);
  if (subpath === "/icon.svg" && (method === "GET" || method === "HEAD")) return asset(ICON, "image/svg+xml", method);

  const token = env?.[admin.tokenSecret];
  if (typeof token !== "string" || token.length < MIN_TOKEN_LENGTH) return errorResponse(GatewayError.ADMIN_DISABLED);
  const nowMs = hooks.nowMs();

  if (subpath === "") {
    if (method !== "GET" && method !== "HEAD") return notAllowed("GET, HEAD");
    return html((await hasSession(request, token, nowMs)) ? dashboardPage(base) : loginPage(base));
  }
  if (subpath === "/login") {
    if (method !== "POST") return notAllowed("POST");
    if (!sameOrigin(request)) return html(loginPage(base, "Sign in from this page."), 403);
    const presented = await formToken(request);
    if (presented === null || !(await tokensEqual(presented, token))) return html(loginPage(base, "That is not the admin token."), 401);
    return new Response(null, { status: 303, headers: { ...securityHeaders("text/plain"), location: base, "set-cookie": await newSessionCookie(token, nowMs) } });
  }
  if (subpath === "/logout") {
    if (method !== "POST") return notAllowed("POST");
    if (!sameOrigin(request)) return html(loginPage(base, "Sign out from the dashboard."), 403);
    return new Response(null, { status: 303, headers: { ...securityHeaders("text/plain"), location: base, "set-cookie": CLEARED_COOKIE } });
  }
  if (subpath === "/data") {
    if (method !== "GET") return notAllowed("GET");
    const bearer = BEARER.exec(request.headers.get("authorization") ?? "")?.[1];
    const allowed = bearer !== undefined ? await tokensEqual(bearer, token) : await hasSession(request, token, nowMs);
    if (!allowed) return errorResponse(GatewayError.UNAUTHORIZED);
    // This isolate's own counters are sent first, so the page never shows less than /metrics here.
    await hooks.reportNow(env);
    let object;
    try {
      object = dashboardObject(env, admin.dashboard.binding);
    } catch {
      // The binding is missing: a deployment mistake, answered as one (the log names the field).
      return errorResponse(GatewayError.MISCONFIGURED, { extra: { field: "admin.dashboard.binding" } });
    }
    const view = await object.view();
    // The blocks of auto-blocking rules in force: the deployment's list (auto-blocks.js), its keys
    // redacted as the limited keys are, unless the configuration shows keys.
    const inForce = (await hooks.blocksNow?.(env)) ?? [];
    const blocks = await Promise.all(
      inForce.slice(0, MAX_SHOWN_BLOCKS).map(async ({ rule, key, untilMs }) => ({ rule, key: admin.dashboard.showKeys === true ? key : await redact(key, token), untilMs })),
    );
    return new Response(JSON.stringify({ ...view, lockoutRules: hooks.lockoutRules, blocks }), { headers: securityHeaders("application/json") });
  }
  return errorResponse(GatewayError.NO_ROUTE);
}

/** @param {string} body @param {string} contentType @param {string} method @returns {Response} */
function asset(body, contentType, method) {
  return new Response(method === "HEAD" ? null : body, { headers: { ...securityHeaders(contentType), "cache-control": "no-cache" } });
}

/** @param {string} body @param {number} status @returns {Response} */
function html(body, status = 200) {
  return new Response(body, { status, headers: securityHeaders("text/html; charset=utf-8") });
}

/** @param {string} allow @returns {Response} */
function notAllowed(allow) {
  return errorResponse(GatewayError.METHOD_NOT_ALLOWED, { headers: { allow } });
}

// The `token` field of a urlencoded form body of at most MAX_LOGIN_BYTES, or null.
/** @param {Request} request @returns {Promise<string | null>} */
async function formToken(request) {
  const type = (request.headers.get("content-type") ?? "").split(";")[0].trim().toLowerCase();
  if (type !== "application/x-www-form-urlencoded") return null;
  const body = await readBoundedBody(request, MAX_LOGIN_BYTES);
  if (body === null) return null;
  const values = new URLSearchParams(new TextDecoder().decode(body)).getAll("token");
  return values.length === 1 ? values[0] : null;
}
