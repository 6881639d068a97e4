// Lets Node import the Worker's modules directly (they import sluice.wasm as a module), for tests of
// construction and of pure middleware behaviour with Hono's app.request(). Import the Worker's
// modules dynamically after this one: static imports are resolved before any hook is registered.
import { register } from "node:module";

register("./wasm-hook.js", import.meta.url);
