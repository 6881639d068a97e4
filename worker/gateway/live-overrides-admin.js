// The admin endpoint of the live tables of overrides the configuration's rules read (a rule's
// `liveOverrides`): `<admin.path>/overrides/<name>` serves table <name> with the library's
// overridesAdmin (GET the table, PUT or DELETE one override; the admin token, fail closed; every change
// audited by the table's object with the key as a fingerprint). docs/overrides.md, "The live table".
import { overridesAdmin } from "../src/features/overrides/admin.js";

/** @import { GatewayConfig } from "./config.js" */

/** The path below admin.path where the live tables' endpoints answer, one per table name. */
export const OVERRIDES_SUBPATH = "/overrides";

/**
 * createLiveOverridesAdmin returns serve(request, subpath, env) for the tables of `config`'s rules:
 * `subpath` is what follows <admin.path>/overrides ("/<name>"), and serve answers null for a path that
 * names no table of the configuration.
 * @param {GatewayConfig} config
 */
export function createLiveOverridesAdmin(config) {
  /** @type {Map<string, (request: Request, env: any) => Promise<Response>>} */
  const handlers = new Map();
  for (const route of config.routes) {
    for (const rule of route.rules) {
      const live = /** @type {any} */ (rule).liveOverrides;
      if (live === undefined || config.admin === null || handlers.has(live.name.toLowerCase())) continue;
      handlers.set(live.name.toLowerCase(), overridesAdmin({ binding: live.binding, name: live.name, tokenSecret: config.admin.tokenSecret }));
    }
  }
  return {
    enabled: handlers.size > 0,
    /** @param {Request} request @param {string} subpath @param {any} env @returns {Promise<Response> | null} */
    serve(request, subpath, env) {
      const handler = handlers.get(subpath.replace(/^\//, "").toLowerCase());
      return handler === undefined ? null : handler(request, env);
    },
  };
}
