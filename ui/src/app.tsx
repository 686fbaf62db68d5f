/** The page: sign-in gate, header, and the view the URL names. */
import { useEffect, useState } from "preact/hooks";
import { logout, onUnauthorized } from "./api/client";
import { getCurrentUser } from "./api/endpoints";
import { clearToken, readToken } from "./api/token-store";
import type { CurrentUser } from "./api/types";
import { AlertRulesPage } from "./alerts/alert-rules-page";
import { ChannelsPage } from "./alerts/channels-page";
import { ScorersPage } from "./evaluations/scorers-page";
import { LazyDashboard } from "./dashboard/lazy-dashboard";
import { ProjectLanding } from "./dashboard/project-landing";
import { Link, navigate, useRoute } from "./routing/navigation";
import { hrefOf } from "./routing/routes";
import { QueuePage } from "./annotations/queue-page";
import { QueuesPage } from "./annotations/queues-page";
import { ErasePage } from "./views/erase-page";
import { RedactionPage } from "./redaction/redaction-page";
import { ErrorNotice } from "./views/error-notice";
import { ProjectsPage } from "./views/projects-page";
import { RecordsPage } from "./views/records-page";
import { SignIn } from "./views/sign-in";

function here(): string {
  return location.pathname + location.search;
}

export function App() {
  const route = useRoute();
  const [token, setToken] = useState(readToken);
  const [user, setUser] = useState<CurrentUser | null>(null);
  const [userError, setUserError] = useState<unknown>(null);

  useEffect(
    () =>
      onUnauthorized(() => {
        setToken(null);
        setUser(null);
        if (!location.pathname.startsWith("/sign-in")) navigate(hrefOf({ view: "sign-in", next: here() }), { replace: true });
      }),
    [],
  );

  useEffect(() => {
    if (!token) return;
    setUserError(null);
    getCurrentUser().then(setUser, setUserError);
  }, [token]);

  useEffect(() => {
    if (!token && route.view !== "sign-in") navigate(hrefOf({ view: "sign-in", next: here() }), { replace: true });
  }, [token, route.view]);

  if (!token || route.view === "sign-in") {
    const next = route.view === "sign-in" ? route.next : here();
    return (
      <SignIn
        onSignedIn={() => {
          setToken(readToken());
          // Only paths of this page: never an absolute URL from the query string.
          navigate(next.startsWith("/") && !next.startsWith("//") && !next.startsWith("/sign-in") ? next : "/", { replace: true });
        }}
      />
    );
  }

  const signOut = () => {
    void logout();
    clearToken();
    setToken(null);
    setUser(null);
    navigate("/sign-in", { replace: true });
  };

  return (
    <>
      <header class="app-header">
        <Link href="/" class="brand">
          Trace store
        </Link>
        <nav aria-label="Main">
          <Link href="/" aria-current={route.view === "projects" ? "page" : undefined}>
            Projects
          </Link>
          <Link href="/annotation-queues" aria-current={route.view === "queues" || route.view === "queue" ? "page" : undefined}>
            Annotation queues
          </Link>
          <Link href="/alert-channels" aria-current={route.view === "channels" ? "page" : undefined}>
            Alert channels
          </Link>
          <Link href="/scorers" aria-current={route.view === "scorers" ? "page" : undefined}>
            Scorers
          </Link>
          {user?.role === "admin" ? (
            <Link href="/erase" aria-current={route.view === "erase" ? "page" : undefined} data-testid="nav-erase">
              Erase data
            </Link>
          ) : null}
          <a href="/docs">API reference</a>
        </nav>
        <span class="user" data-testid="current-user">
          {/* The API answers Galileo's role names ("user" for a member); the page keeps ours. */}
          {user ? `${user.email} (${user.role === "admin" ? "admin" : "member"})` : ""}
        </span>
        <button type="button" class="button-small" onClick={signOut}>
          Sign out
        </button>
      </header>
      {userError ? <ErrorNotice error={userError} /> : null}
      {route.view === "projects" ? <ProjectsPage /> : null}
      {route.view === "project" ? <ProjectLanding projectId={route.projectId} /> : null}
      {route.view === "dashboard" ? <LazyDashboard route={route} /> : null}
      {route.view === "records" ? <RecordsPage route={route} /> : null}
      {route.view === "erase" ? <ErasePage user={user} /> : null}
      {route.view === "redaction" ? <RedactionPage projectId={route.projectId} user={user} /> : null}
      {route.view === "alerts" ? <AlertRulesPage route={route} user={user} /> : null}
      {route.view === "channels" ? <ChannelsPage user={user} /> : null}
      {route.view === "scorers" ? <ScorersPage user={user} /> : null}
      {route.view === "queues" ? <QueuesPage /> : null}
      {route.view === "queue" ? <QueuePage queueId={route.queueId} at={route.at} /> : null}
      {route.view === "not-found" ? (
        <main class="page">
          <h1>Not found</h1>
          <p>
            Nothing here at <code>{route.path}</code>. <Link href="/">Back to the projects</Link>.
          </p>
        </main>
      ) : null}
    </>
  );
}
