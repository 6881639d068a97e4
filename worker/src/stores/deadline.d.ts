// Types of deadline.js.
export declare class DeadlineError extends Error {
  readonly timeoutMs: number;
}
export declare function withDeadline<T>(work: T | PromiseLike<T>, timeoutMs: number, what: string): T | Promise<T>;
export declare function checkTimeout(value: unknown, field: string): void;
