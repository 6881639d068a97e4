// Types of binding.js.
export declare function checkBinding(binding: unknown, field: string, methods: readonly string[]): void;
export declare function isBound(binding: unknown, env: Record<string, unknown> | undefined): boolean;
export declare function resolveBinding<T>(binding: T | string, env: Record<string, unknown> | undefined, field: string): T;
