// Tests that run inside workerd, against the Worker wrangler.toml describes
// (@cloudflare/vitest-pool-workers). sluice's .wasm is loaded as wrangler loads it.
import { cloudflareTest } from "@cloudflare/vitest-pool-workers";
import { defineConfig } from "vitest/config";

export default defineConfig({
  plugins: [cloudflareTest({ wrangler: { configPath: "./wrangler.toml" } })],
  test: { include: ["test/worker.test.js"] },
});
