import { env } from "cloudflare:workers";
import bundled from "../gateway.config.json";
import { createGateway, resolveConfig } from "./gateway/gateway.js";
export { SluiceDurableObject } from "./src/stores/durable-object.js";

const gateway = createGateway(resolveConfig(bundled, env));
export default { fetch: (request, env, ctx) => gateway.fetch(request, env, ctx) };
