import { Hono } from "hono";
import { jsonField, lockout } from "sluice/hono";

const app = new Hono();
app.post("/login", lockout({ key: jsonField("username") }), async (c) => {
  const { username, password } = await c.req.json();
  if (!(await checkPassword(username, password))) return c.json({ error: "invalid credentials" }, 401);
  return c.json({ ok: true });
});
