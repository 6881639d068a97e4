// Types of throttled-log.js.
/** 60000. */
export declare const DEFAULT_LOG_INTERVAL_MS: number;
export declare function createThrottledLog(log: (line: string) => void, intervalMs: number): (nowMs: number, message: string) => void;
export declare function checkLogOptions(log: unknown, logIntervalMs: unknown): void;
