import { Hono } from "hono";
import { accessList, ip, rateLimit } from "sluice/hono";

const app = new Hono();
app.use("*", accessList({ deny: { ips: ["203.0.113.0/24", "2001:db8:bad::/48"], countries: ["T1"] }, allow: { ips: ["192.0.2.50"] } }));
app.use("/api/*", rateLimit({ key: ip(), limit: 100, windowSec: 60, skip: (c) => c.get("accessList")?.list === "allow" }));
export default app;
