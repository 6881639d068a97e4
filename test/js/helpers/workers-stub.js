// Lets Node import modules that import `cloudflare:workers` (see workers-stub-hook.js). Import such
// modules dynamically after this one: static imports are resolved before any hook is registered.
import { register } from "node:module";

register("./workers-stub-hook.js", import.meta.url);
