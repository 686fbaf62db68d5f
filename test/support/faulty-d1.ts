/**
 * A D1 binding that fails on purpose, for fault-injection tests: it wraps the real local D1 and
 * makes its k-th call (a `batch`, or a statement's `run`/`all`/`first`/`raw`) fail in one of
 * three ways a real deployment can see:
 * - "before": the call never reaches the database (a network error on the way);
 * - "after": the database did the work, but the answer is lost (a network error on the way back);
 * - "inside": one statement of the batch fails in the database (a constraint), so D1 rolls the
 *   whole batch back.
 * Everything else passes through to the real database.
 */
export type FaultMode = "before" | "after" | "inside";

export interface FaultyD1 {
  db: D1Database;
  /** Calls made so far. */
  calls(): number;
  /** Whether the fault has fired. */
  fired(): boolean;
}

/** A statement that fails inside the database, whatever the schema holds: a NOT NULL violation. */
const FAILING_STATEMENT = "INSERT INTO organizations (id, name, created_at) VALUES (NULL, NULL, NULL)";

export function faultyD1(real: D1Database, failAt: number, mode: FaultMode): FaultyD1 {
  let calls = 0;
  let fired = false;
  const trip = () => {
    calls += 1;
    if (calls !== failAt) return false;
    fired = true;
    return true;
  };
  const targets = new WeakMap<object, D1PreparedStatement>();
  const wrapStatement = (statement: D1PreparedStatement): D1PreparedStatement => {
    const proxy = new Proxy(statement, {
      get(target, property, receiver) {
        const value = Reflect.get(target, property, receiver);
        if (property === "bind") return (...args: unknown[]) => wrapStatement((value as (...a: unknown[]) => D1PreparedStatement).apply(target, args));
        if (typeof property === "string" && ["run", "all", "first", "raw"].includes(property)) {
          return async (...args: unknown[]) => {
            if (!trip()) return (value as (...a: unknown[]) => unknown).apply(target, args);
            if (mode === "before") throw new Error("D1_ERROR: Network connection lost. (injected before the call)");
            if (mode === "inside") return real.prepare(FAILING_STATEMENT).run();
            await (value as (...a: unknown[]) => unknown).apply(target, args);
            throw new Error("D1_ERROR: Network connection lost. (injected after the call)");
          };
        }
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    targets.set(proxy, statement);
    return proxy;
  };
  // The real batch wants the real statements.
  const unwrap = (statement: D1PreparedStatement) => targets.get(statement) ?? statement;
  const db = {
    prepare: (sql: string) => wrapStatement(real.prepare(sql)),
    batch: async (statements: D1PreparedStatement[]) => {
      const plain = statements.map(unwrap);
      if (!trip()) return real.batch(plain);
      if (mode === "before") throw new Error("D1_ERROR: Network connection lost. (injected before the batch)");
      if (mode === "inside") {
        const at = Math.floor(plain.length / 2);
        return real.batch([...plain.slice(0, at), real.prepare(FAILING_STATEMENT), ...plain.slice(at)]);
      }
      await real.batch(plain);
      throw new Error("D1_ERROR: Network connection lost. (injected after the batch)");
    },
    exec: (sql: string) => real.exec(sql),
    dump: () => real.dump(),
    withSession: (...args: unknown[]) => (real as unknown as { withSession: (...a: unknown[]) => unknown }).withSession(...args),
  } as unknown as D1Database;
  return { db, calls: () => calls, fired: () => fired };
}
