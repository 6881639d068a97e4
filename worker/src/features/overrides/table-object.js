// The live table of overrides: a Durable Object holding per-key limits that change without a redeploy
// (overridesAdmin writes it, liveOverrides reads it in every isolate). Every change bumps the table's
// version and is audited: who, what, when, with the key itself replaced by a fingerprint (an override's
// key may be an API key: it never reaches a log).
import { DurableObject } from "cloudflare:workers";
import { normalizeOverrides } from "./overrides.js";

/** @import { Override } from "./overrides.js" */

const SCHEMA = `
  CREATE TABLE IF NOT EXISTS sluice_overrides (kind TEXT NOT NULL, text TEXT NOT NULL, lim INTEGER NOT NULL, PRIMARY KEY (kind, text));
  CREATE TABLE IF NOT EXISTS sluice_overrides_meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
  CREATE TABLE IF NOT EXISTS sluice_overrides_audit (version INTEGER PRIMARY KEY, at INTEGER NOT NULL, actor TEXT NOT NULL, action TEXT NOT NULL, kind TEXT NOT NULL, fingerprint TEXT NOT NULL, lim INTEGER);
`;
/** The audit keeps the latest changes only. */
const AUDIT_ROWS = 1000;

/** fingerprint is the first 16 hex digits of SHA-256(text): enough to tell overrides apart, nothing to reuse. @param {string} text @returns {Promise<string>} */
export async function fingerprint(text) {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)));
  return [...digest.slice(0, 8)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/**
 * SluiceOverridesObject keeps the live table of overrides. Export it from the Worker's main module and
 * bind it (a `new_sqlite_classes` migration) as liveOverrides' and overridesAdmin's `binding`.
 */
export class SluiceOverridesObject extends DurableObject {
  /** @param {DurableObjectState} ctx @param {unknown} env */
  constructor(ctx, env) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    this.sql.exec(SCHEMA);
  }

  /** @returns {number} */
  #version() {
    const row = this.sql.exec("SELECT value FROM sluice_overrides_meta WHERE name = 'version'").toArray()[0];
    return row === undefined ? 0 : Number(row.value);
  }

  /** list is the table and its version. @returns {{ version: number, overrides: Override[] }} */
  list() {
    const overrides = this.sql
      .exec("SELECT kind, text, lim FROM sluice_overrides ORDER BY kind, text")
      .toArray()
      .map((row) => (row.kind === "key" ? { key: String(row.text), limit: Number(row.lim) } : { prefix: String(row.text), limit: Number(row.lim) }));
    return { version: this.#version(), overrides };
  }

  /**
   * put sets one override (replacing one for the same key or prefix), if the table stays valid (the same
   * rules as a configured list: at most 1,000 overrides and 7 distinct limits). Returns the new version,
   * or the refusal's field and problem.
   * @param {Override} override @param {string} actor who asked (the admin handler says), for the audit
   */
  async put(override, actor) {
    const { overrides } = this.list();
    const kind = override?.key !== undefined ? "key" : "prefix";
    const text = kind === "key" ? override.key : override?.prefix;
    const rest = overrides.filter((o) => (kind === "key" ? o.key !== text : o.prefix !== text));
    try {
      normalizeOverrides([...rest, override], "overrides");
    } catch (error) {
      // The field as the caller wrote it (its index in the whole table means nothing to them).
      const field = String(/** @type {any} */ (error).field ?? "overrides").replace(/^overrides\[\d+\]\./, "");
      return { ok: false, field, problem: /** @type {Error} */ (error).message };
    }
    const version = this.#version() + 1;
    this.sql.exec("INSERT INTO sluice_overrides (kind, text, lim) VALUES (?, ?, ?) ON CONFLICT (kind, text) DO UPDATE SET lim = excluded.lim", kind, text, override.limit);
    await this.#audit(version, actor, "put", kind, /** @type {string} */ (text), override.limit); // normalizeOverrides checked it
    return { ok: true, version };
  }

  /**
   * remove deletes the override of a key or prefix. Returns the new version (unchanged when there was none).
   * @param {{ key?: string, prefix?: string }} which @param {string} actor
   */
  async remove(which, actor) {
    const kind = which?.key !== undefined ? "key" : "prefix";
    const text = String(kind === "key" ? which.key : which?.prefix);
    const had = this.sql.exec("SELECT lim FROM sluice_overrides WHERE kind = ? AND text = ?", kind, text).toArray().length > 0;
    if (!had) return { ok: true, version: this.#version() };
    const version = this.#version() + 1;
    this.sql.exec("DELETE FROM sluice_overrides WHERE kind = ? AND text = ?", kind, text);
    await this.#audit(version, actor, "remove", kind, text, null);
    return { ok: true, version };
  }

  /** audit is the latest changes, newest first (keys as fingerprints). */
  audit() {
    return this.sql.exec("SELECT version, at, actor, action, kind, fingerprint, lim FROM sluice_overrides_audit ORDER BY version DESC LIMIT 100").toArray();
  }

  /** @param {number} version @param {unknown} actor @param {"put" | "remove"} action @param {string} kind @param {string} text @param {number | null} limit */
  async #audit(version, actor, action, kind, text, limit) {
    const entry = { version, at: Date.now(), actor: String(actor).slice(0, 64), action, kind, fingerprint: await fingerprint(text), limit };
    this.sql.exec("INSERT INTO sluice_overrides_meta (name, value) VALUES ('version', ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value", version);
    this.sql.exec("INSERT INTO sluice_overrides_audit (version, at, actor, action, kind, fingerprint, lim) VALUES (?, ?, ?, ?, ?, ?, ?)", version, entry.at, entry.actor, action, kind, entry.fingerprint, limit);
    this.sql.exec("DELETE FROM sluice_overrides_audit WHERE version <= ?", version - AUDIT_ROWS);
    console.log(JSON.stringify({ event: "sluice.override", ...entry }));
  }
}
