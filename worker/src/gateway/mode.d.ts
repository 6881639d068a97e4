// Types of mode.js: what a rule's mode and rollout make of its decision.

import type { Decision } from "../../../wasm-bindings/sluice.js";
import type { GatewayRule, Mode } from "./config.js";

export declare const MODES: readonly Mode[];
/** 32-bit FNV-1a of the UTF-8 bytes of `text`, unsigned. */
export declare function fnv1a32(text: string): number;
/** Where (rule, key) falls in [0, 1); stable across isolates and releases. */
export declare function rolloutPoint(ruleName: string, key: string): number;
/** The mode a rule runs in for one key; a partial rollout with no key enforces. */
export declare function effectiveMode(rule: Pick<GatewayRule, "name" | "mode" | "rollout">, key: string | undefined): Mode;
export declare function ruleEvent(mode: Mode, decision: Decision): "admitted" | "denied" | "would_have_denied";
/** An admitted decision that leaves 80 % or more of the limit used. */
export declare function isNearLimit(decision: Decision): boolean;
