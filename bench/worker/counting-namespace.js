// A Durable Object namespace whose stubs count the RPCs made through them (decide and undo): the round
// trips a store made, counted on the binding. `extraOptions` are added to every decide() (figure 7's
// echo object takes `write` that way).
export function countingNamespace(namespace, counter, extraOptions = {}) {
  return {
    idFromName: (name) => namespace.idFromName(name),
    get(id) {
      const stub = namespace.get(id);
      return {
        decide(checks, options) {
          counter.rpcs++;
          return stub.decide(checks, { ...options, ...extraOptions });
        },
        undo(...args) {
          counter.rpcs++;
          return stub.undo(...args);
        },
      };
    },
  };
}
