// Types of binding.js.
export declare function checkBinding(binding: unknown, field: string, methods: readonly string[]): void;
export declare function isBound(binding: unknown, env: object | undefined): boolean;
export declare function resolveBinding<T>(binding: T | string, env: object | undefined, field: string): T;
