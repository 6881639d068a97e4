// Writes gateway.config.schema.json, the JSON Schema of gateway.config.json, from the table the
// gateway's validators read (worker/gateway/config-fields.js). test/js/gateway-config-schema.test.js
// fails when the committed file is not what this writes.
import { writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { configSchema } from "../worker/gateway/config-schema.js";

const target = fileURLToPath(new URL("../gateway.config.schema.json", import.meta.url));
writeFileSync(target, `${JSON.stringify(configSchema(), null, 2)}\n`);
console.log("build:config-schema: gateway.config.schema.json");
