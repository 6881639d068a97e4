// Plain vitest under Node, for code that uses sluice outside a Worker: the same imports work there,
// loading the .wasm from the package's file.
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: { include: ["test/node.test.js"], environment: "node" },
});
