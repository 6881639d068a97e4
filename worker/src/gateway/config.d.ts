// Types of config.js: the gateway configuration as written (GatewayConfigInput) and as validated
// (GatewayConfig). README.md ("The gateway", "Configuration") documents every field.

import type { AlgorithmName } from "../../../wasm-bindings/sluice.js";
import type { HeaderMode } from "../options.js";
import type { DurableStoreSettings, KvStoreSettings } from "../stores/registry.js";
import type { NormalizedRule } from "../stores/store.js";

export type Mode = "enforce" | "shadow" | "bypass";
export type Store = "memory" | "durable" | "kv";
export type Method = "GET" | "HEAD" | "POST" | "PUT" | "PATCH" | "DELETE" | "OPTIONS";
/** "ip", "user", "route" or "apiKey:<header name>". */
export type KeyPart = "ip" | "user" | "route" | `apiKey:${string}`;

/** A rule's window: exactly one of windowSec (whole milliseconds) and windowMs. */
export type WindowInput = { windowSec: number; windowMs?: undefined } | { windowMs: number; windowSec?: undefined };

export type RuleInput = WindowInput & {
  name: string;
  algorithm: AlgorithmName;
  limit: number;
  /** token-bucket, leaky-bucket and gcra only. */
  burst?: number;
  /** Keys the rule's table holds in an isolate before it evicts the least used (the host's default: 50,000). */
  keyCapacity?: number;
  key: KeyPart | KeyPart[];
  store?: Store;
  mode?: Mode;
  /** Mode "enforce" only: the share of keys enforced, from 0 to 1. */
  rollout?: number;
};

export interface UpstreamInput {
  url: string;
  /** A service binding to send the requests through instead of the network. */
  service?: string;
  auth?: { secret: string; header?: string; scheme?: string };
  /** How long to wait for the response head, in ms (1 to 300000); default 10000. */
  timeoutMs?: number;
  /** How long the upstream may fall silent in the middle of its body while the client waits, in ms
   * (1 to 3600000), or null for no bound; default 60000. */
  bodyTimeoutMs?: number | null;
  /** The largest request body forwarded, in bytes (0 to 104857600); default 1048576. Bodies are read whole first. */
  maxBodyBytes?: number;
  /** Request headers stripped by default (credentials, client-IP, method-override, URL-rewrite headers, names with _) to forward anyway. */
  forwardHeaders?: string[];
  /** More request headers never forwarded. */
  stripHeaders?: string[];
  /** A header the gateway sets to the client's address (cf-connecting-ip), e.g. "x-real-ip"; default none. */
  clientIpHeader?: string | null;
  /** "upstream" (default) or a Cache-Control value for successful responses. */
  cacheControl?: string;
}

export interface RouteInput {
  prefix: string;
  methods: Method[];
  rules: RuleInput[];
  upstream: UpstreamInput;
}

/** The host's settings of the durable and kv stores (shards, timeoutMs, failMode, fallback, ...), for every rule using them. */
export interface StoresInput {
  durable?: DurableStoreSettings;
  kv?: KvStoreSettings;
}

export interface ResponsesInput {
  /** The `code` of a 429's body; default "sluice_rate_limited". */
  code?: string | number;
  /** Answer 429s as application/problem+json; default false. */
  problemJson?: boolean;
  /** Which rate-limit header fields responses carry; default "both". */
  headers?: HeaderMode;
}

export interface GatewayConfigInput {
  routes: RouteInput[];
  stores?: StoresInput;
  responses?: ResponsesInput;
  admin?: { path: string; tokenSecret: string };
  analytics?: { binding: string };
}

/** A validated rule: the host's normalized rule (id, name, algorithm, limit, windowMs, burst, keyCapacity) plus the gateway's fields. */
export interface GatewayRule extends NormalizedRule {
  /** Canonical parts: header names lower-cased. */
  readonly key: readonly KeyPart[];
  readonly store: Store;
  readonly mode: Mode;
  readonly rollout: number;
}

export interface GatewayUpstream {
  /** Canonical URL: origin + basePath. */
  readonly url: string;
  readonly origin: string;
  /** "" or "/a/b", never with a trailing slash. */
  readonly basePath: string;
  readonly service: string | null;
  readonly auth: { readonly secret: string; readonly header: string; readonly scheme: string } | null;
  readonly timeoutMs: number;
  readonly bodyTimeoutMs: number | null;
  readonly maxBodyBytes: number;
  readonly forwardHeaders: readonly string[];
  readonly stripHeaders: readonly string[];
  readonly clientIpHeader: string | null;
  readonly cacheControl: string;
}

export interface GatewayRoute {
  readonly index: number;
  readonly prefix: string;
  readonly methods: readonly Method[];
  readonly rules: readonly GatewayRule[];
  /** Indexes of the rules not in bypass mode. */
  readonly activeRuleIndexes: readonly number[];
  /** The active rules by store (memory, then kv, then durable); each group is one limiter call. */
  readonly storeGroups: readonly (readonly number[])[];
  /** Whether any rule can ever block a request on this route. */
  readonly canBlock: boolean;
  readonly upstream: GatewayUpstream;
}

export interface GatewayConfig {
  /** Where the configuration came from ("gateway.config.json", "SLUICE_CONFIG"), for errors found later. */
  readonly source: string;
  readonly routes: readonly GatewayRoute[];
  readonly stores: { readonly durable: Readonly<DurableStoreSettings>; readonly kv: Readonly<KvStoreSettings> };
  readonly responses: { readonly code: string | number; readonly problemJson: boolean; readonly headers: HeaderMode };
  readonly admin: { readonly path: string; readonly tokenSecret: string } | null;
  readonly analytics: { readonly binding: string };
}

/** An invalid configuration: `path` names the field (e.g. "routes[2].rules[0].limit"). */
export declare class ConfigError extends Error {
  readonly path: string;
  readonly problem: string;
  /** Where the configuration came from: "gateway.config.json", "SLUICE_CONFIG", ... */
  readonly source?: string;
}

export declare const CONFIG_VAR: "SLUICE_CONFIG";
export declare const DEFAULT_TIMEOUT_MS: 10000;
export declare const MAX_TIMEOUT_MS: 300000;
export declare const DEFAULT_ANALYTICS_BINDING: "SLUICE_ANALYTICS";
export declare const METHODS: readonly Method[];
export declare const MAX_RULES_PER_ROUTE: 16;
export declare const DEFAULT_LIMITED_CODE: "sluice_rate_limited";

/** Validates `raw`; throws ConfigError naming the first field at fault. */
export declare function validateConfig(raw: unknown, source?: string): GatewayConfig;
export declare function isValidatedConfig(config: unknown): config is GatewayConfig;
/** env.SLUICE_CONFIG (a JSON string or a table) when set, else `bundled`; validated. */
export declare function resolveConfig(bundled: unknown, env: object | undefined, bundledName?: string): GatewayConfig;
