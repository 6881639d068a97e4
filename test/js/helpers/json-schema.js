// A JSON Schema (draft 2020-12) checker for the keywords gateway.config.schema.json uses, and only
// those: any other keyword throws, so a schema that grows one cannot pass unchecked. Errors carry the
// instance's path in the gateway validator's spelling (routes[0].rules[1].limit), so tests can compare.
// Where anyOf fails, the errors of the branch that failed least are reported (as editors do).

const ANNOTATIONS = new Set(["$schema", "title", "description", "$defs"]);
const KEYWORDS = new Set(["$ref", "type", "enum", "const", "minimum", "maximum", "exclusiveMinimum", "minItems", "maxItems", "pattern", "items", "anyOf", "properties", "required", "additionalProperties"]);

const join = (path, name) => (typeof name === "number" ? `${path}[${name}]` : path === "" ? name : `${path}.${name}`);
const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

function typeOf(value) {
  if (value === null) return ["null"];
  if (Array.isArray(value)) return ["array"];
  if (typeof value === "number") return Number.isInteger(value) ? ["integer", "number"] : ["number"];
  return [typeof value];
}

/**
 * The errors of `value` against `schema` ({ path, message }); none when it is valid.
 * @param {any} schema @param {unknown} value @param {any} [root] @param {string} [path]
 * @returns {{ path: string, message: string }[]}
 */
export function schemaErrors(schema, value, root = schema, path = "") {
  for (const keyword of Object.keys(schema)) {
    if (!ANNOTATIONS.has(keyword) && !KEYWORDS.has(keyword)) throw new Error(`json-schema.js does not check the keyword ${keyword}`);
  }
  const errors = [];
  const fail = (message, at = path) => errors.push({ path: at, message });
  if (schema.$ref !== undefined) {
    const name = /^#\/\$defs\/(.+)$/.exec(schema.$ref)?.[1];
    if (name === undefined || root.$defs?.[name] === undefined) throw new Error(`unresolvable $ref ${schema.$ref}`);
    errors.push(...schemaErrors(root.$defs[name], value, root, path));
  }
  if (schema.type !== undefined) {
    const types = [schema.type].flat();
    if (!typeOf(value).some((type) => types.includes(type))) return [...errors, { path, message: `must be ${types.join(" or ")}` }];
  }
  if (schema.enum !== undefined && !schema.enum.some((choice) => same(choice, value))) fail(`must be one of ${JSON.stringify(schema.enum)}`);
  if (schema.const !== undefined && !same(schema.const, value)) fail(`must be ${JSON.stringify(schema.const)}`);
  if (typeof value === "number") {
    if (schema.minimum !== undefined && value < schema.minimum) fail(`must be >= ${schema.minimum}`);
    if (schema.maximum !== undefined && value > schema.maximum) fail(`must be <= ${schema.maximum}`);
    if (schema.exclusiveMinimum !== undefined && value <= schema.exclusiveMinimum) fail(`must be > ${schema.exclusiveMinimum}`);
  }
  if (typeof value === "string" && schema.pattern !== undefined && !new RegExp(schema.pattern, "u").test(value)) fail(`must match ${schema.pattern}`);
  if (Array.isArray(value)) {
    if (schema.minItems !== undefined && value.length < schema.minItems) fail(`must have at least ${schema.minItems} items`);
    if (schema.maxItems !== undefined && value.length > schema.maxItems) fail(`must have at most ${schema.maxItems} items`);
    if (schema.items !== undefined) value.forEach((item, i) => errors.push(...schemaErrors(schema.items, item, root, join(path, i))));
  }
  if (schema.anyOf !== undefined) {
    const branches = schema.anyOf.map((branch) => schemaErrors(branch, value, root, path));
    // The branch whose type fits the value is the one meant; among those, the one that failed least.
    const misfit = (branchErrors) => branchErrors.some((e) => e.path === path && e.message.startsWith("must be ") && /^must be (string|number|integer|boolean|object|array|null)( or |$)/.test(e.message));
    const rank = (branchErrors) => (misfit(branchErrors) ? 1e6 : 0) + branchErrors.length;
    if (!branches.some((branchErrors) => branchErrors.length === 0)) errors.push(...branches.reduce((a, b) => (rank(b) < rank(a) ? b : a)));
  }
  if (value !== null && typeof value === "object" && !Array.isArray(value)) {
    for (const name of schema.required ?? []) if (!(name in value)) fail("is required", join(path, name));
    for (const [name, item] of Object.entries(value)) {
      const property = schema.properties?.[name];
      if (property !== undefined) errors.push(...schemaErrors(property, item, root, join(path, name)));
      else if (schema.additionalProperties === false) fail("is not allowed", join(path, name));
    }
  }
  return errors;
}
