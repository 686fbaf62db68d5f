/**
 * The dashboard as a chunk of its own, fetched the first time one is opened: the chart library
 * (uPlot, about half the dashboard's code) stays out of the script every other view waits for.
 */
import { useEffect, useState } from "preact/hooks";
import type { Route } from "../routing/routes";
import { ErrorNotice } from "../views/error-notice";

type DashboardModule = typeof import("./dashboard-page");

let loading: Promise<DashboardModule> | null = null;

export function LazyDashboard({ route }: { route: Extract<Route, { view: "dashboard" }> }) {
  const [module, setModule] = useState<DashboardModule | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [attempt, setAttempt] = useState(0);
  useEffect(() => {
    loading ??= import("./dashboard-page");
    loading.then(setModule, (caught: unknown) => {
      // A failed fetch (a deploy replaced the chunk, the network dropped) may succeed when retried.
      loading = null;
      setError(caught);
    });
  }, [attempt]);
  if (module) return <module.DashboardPage route={route} />;
  return (
    <main class="page page-wide">
      {error ? (
        <ErrorNotice
          error={error}
          onRetry={() => {
            setError(null);
            setAttempt((n) => n + 1);
          }}
        />
      ) : (
        <p class="muted">Loading…</p>
      )}
    </main>
  );
}
