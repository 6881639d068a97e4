// Type-level assertions: `type _ = Expect<Equal<A, B>>` fails to compile unless A and B are the same type.
export type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
export type Expect<T extends true> = T;
// True when T is `any` (nothing but `any` makes 1 & T accept 0): holds public callbacks to a real type.
export type IsAny<T> = 0 extends 1 & T ? true : false;
