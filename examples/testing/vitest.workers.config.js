// vitest inside workerd, against the Worker wrangler.toml describes (@cloudflare/vitest-pool-workers).
import { cloudflareTest } from "@cloudflare/vitest-pool-workers";
import { defineConfig } from "vitest/config";

export default defineConfig({
  plugins: [cloudflareTest({ wrangler: { configPath: "./wrangler.toml" } })],
  test: { include: ["test/workers/**/*.test.js"] },
});
