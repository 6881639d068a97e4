/** nowMs reports the current time in whole milliseconds since the Unix epoch. */
export declare function nowMs(): number;
