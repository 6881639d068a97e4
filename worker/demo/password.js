// The demo's one password, for every account: a stand-in for checking credentials, shared by the Hono
// demo (demo.js) and the gateway's demo upstream (upstream.js).
export const DEMO_PASSWORD = "correct horse battery staple";
