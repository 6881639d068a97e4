// The headers every gateway bench request carries (a module of its own: the in-isolate driver imports it too).
export const HEADERS = { "cf-connecting-ip": "203.0.113.7", "user-agent": "bench/1.0", accept: "*/*" };
