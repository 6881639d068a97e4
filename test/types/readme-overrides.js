import { Hono } from "hono";
import { rateLimit, apiKey, overrideList } from "sluice/hono";

const app = new Hono();
app.use(
  "/api/*",
  rateLimit({
    key: apiKey("x-api-key"),
    limit: 100,
    windowSec: 60,
    overrides: overrideList([
      { key: "key:partner-acme", limit: 1000 },
      { prefix: "key:tenant-noisy-", limit: 25 },
    ]),
  }),
);
