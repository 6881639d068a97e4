// The Redis store's one server-side script: the append branch (redis-append-script.js, when ARGV[1] is
// "append") in front of the compare-and-set (redis-cas-script.js, whose ARGV[1] is a time). One script,
// so an isolate's first call loads one (EVALSHA, then EVAL once after NOSCRIPT), whichever it needs.
import { REDIS_APPEND_ENTRY, REDIS_APPEND_SCRIPT } from "./redis-append-script.js";
import { REDIS_CAS_SCRIPT } from "./redis-cas-script.js";

/** REDIS_SCRIPT is the Lua source the store sends; its SHA-1 is what EVALSHA sends. */
export const REDIS_SCRIPT = `${REDIS_APPEND_ENTRY}if ARGV[1] == 'append' then
${REDIS_APPEND_SCRIPT}end
${REDIS_CAS_SCRIPT}`;
