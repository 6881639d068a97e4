// Client keys as reports show them. A key built from a bearer token (user:<token>), an API key header
// (key:<value>), a cookie (cookie-<name>:<value>, a session) or a query parameter (query-<name>:, a
// token in a link) may carry a credential: reports show a fingerprint of it instead (the first 12 hex
// digits of its SHA-256), the same for the same value, so a client can be followed across rules and
// runs without the report holding anything that authenticates. Addresses, paths, request.cf fields and
// verified JWT claims are shown as they are. --show-keys shows every key as it is (the report is then as secret as the log).
import { createHash } from "node:crypto";

const SECRET_PART = /^(user|key|cookie-[^:]*|query-[^:]*):(.*)$/s;

/**
 * redactKey gives the key text a report may show.
 * @param {string} key
 * @returns {string}
 */
export function redactKey(key) {
  return key
    .split("|")
    .map((part) => {
      const m = SECRET_PART.exec(part);
      if (m === null) return part;
      return `${m[1]}:sha256:${createHash("sha256").update(m[2]).digest("hex").slice(0, 12)}`;
    })
    .join("|");
}

/**
 * redactResult returns replay()'s summary with every client key passed through `show`.
 * @param {any} result
 * @param {(key: string) => string} show
 */
export function redactResult(result, show) {
  return { ...result, rules: result.rules.map((/** @type {any} */ rule) => ({ ...rule, topClients: rule.topClients.map((/** @type {any} */ c) => ({ ...c, key: show(c.key) })) })) };
}
