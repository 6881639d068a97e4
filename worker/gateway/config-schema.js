// The JSON Schema of gateway.config.json, generated from the table the validators read
// (config-fields.js), so that an editor completes and checks the file as start-up will.
// scripts/build-config-schema.js writes it to gateway.config.schema.json.
import { CONFIG_FIELDS } from "./config-fields.js";

/** @import { Field } from "./config-fields.js" */

const DRAFT = "https://json-schema.org/draft/2020-12/schema";
// JSON Schema keywords a field may carry as they are.
/** @type {readonly (keyof Field)[]} */
const KEYWORDS = ["type", "enum", "const", "minimum", "maximum", "exclusiveMinimum", "minItems", "maxItems"];

/** @param {Field} field @returns {Record<string, unknown>} */
function fieldSchema(field) {
  if (field.ref !== undefined) return { $ref: `#/$defs/${field.ref}`, description: field.description };
  /** @type {Record<string, unknown>} */
  const schema = { description: field.description };
  for (const keyword of KEYWORDS) if (field[keyword] !== undefined) schema[keyword] = field[keyword];
  if (field.pattern !== undefined) schema.pattern = field.pattern.source;
  if (field.items !== undefined) schema.items = fieldSchema(field.items);
  if (field.anyOf !== undefined) schema.anyOf = field.anyOf.map(fieldSchema);
  return schema;
}

/** @param {Readonly<Record<string, Field>>} fields */
function objectSchema(fields) {
  const names = Object.keys(fields);
  const required = names.filter((name) => fields[name].required === true);
  return {
    type: "object",
    properties: Object.fromEntries(names.map((name) => [name, fieldSchema(fields[name])])),
    ...(required.length > 0 ? { required } : {}),
    // Unknown fields are errors at start-up (a misspelt `windowsec` must not leave a rule at its default).
    additionalProperties: false,
  };
}

/**
 * configSchema is the JSON Schema (draft 2020-12) of gateway.config.json.
 * @returns {Record<string, unknown>}
 */
export function configSchema() {
  const { config, ...others } = CONFIG_FIELDS;
  return {
    $schema: DRAFT,
    title: "sluice gateway configuration (gateway.config.json)",
    description: "Generated from worker/gateway/config-fields.js by scripts/build-config-schema.js; docs/gateway.md describes every field. The gateway's start-up checks (npx sluice check) are the authority: checks that span fields or are code (canonical URLs, a rule's quota against the core's bounds, which keys jwt verifies with, a fallback's order, whether a listed address parses) are theirs alone.",
    ...objectSchema(config),
    $defs: Object.fromEntries(Object.entries(others).map(([name, fields]) => [name, objectSchema(fields)])),
  };
}
