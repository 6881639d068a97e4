// Types of throttled-log.js.
export declare function createThrottledLog(log: (line: string) => void, intervalMs: number): (nowMs: number, message: string) => void;
export declare function checkLogOptions(log: unknown, logIntervalMs: unknown): void;
