// Plain vitest under Node.
import { defineConfig } from "vitest/config";

export default defineConfig({ test: { include: ["test/vitest/**/*.test.js"], environment: "node" } });
