// The Worker: the app on the wall clock, and the Durable Object class wrangler.toml binds as SLUICE_DO.
import { createApp } from "./app.js";

export { SluiceDurableObject } from "sluice/durable-object";
export default createApp();
