/** Sign in with email and password (POST /login) or with an API key (POST /login/api_key). */
import { useState } from "preact/hooks";
import { ApiError, loginWithApiKey, loginWithPassword } from "../api/client";
import { saveToken } from "../api/token-store";
import { describeError } from "./error-notice";

export function SignIn({ onSignedIn }: { onSignedIn: () => void }) {
  const [method, setMethod] = useState<"password" | "api_key">("password");
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const [apiKey, setApiKey] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const token = method === "password" ? await loginWithPassword(email.trim(), password) : await loginWithApiKey(apiKey.trim());
      saveToken(token);
      onSignedIn();
    } catch (caught) {
      // A 401 here is the service's verdict on these credentials: its message says which.
      if (caught instanceof ApiError && caught.status === 401) setError(caught.message);
      else {
        const { title, detail } = describeError(caught);
        setError(`${title}: ${detail}`);
      }
    } finally {
      setBusy(false);
    }
  };

  return (
    <main class="sign-in">
      <form class="card sign-in-card" onSubmit={submit} aria-labelledby="sign-in-title">
        <h1 id="sign-in-title">Trace store</h1>
        <p class="muted">Sign in to explore your traces.</p>
        <div class="segmented" role="tablist" aria-label="Sign-in method">
          <button type="button" role="tab" aria-selected={method === "password"} onClick={() => setMethod("password")}>
            Email and password
          </button>
          <button type="button" role="tab" aria-selected={method === "api_key"} onClick={() => setMethod("api_key")}>
            API key
          </button>
        </div>
        {method === "password" ? (
          <>
            <label>
              Email
              <input name="email" type="email" autoComplete="username" required value={email} onInput={(e) => setEmail(e.currentTarget.value)} />
            </label>
            <label>
              Password
              <input name="password" type="password" autoComplete="current-password" required value={password} onInput={(e) => setPassword(e.currentTarget.value)} />
            </label>
          </>
        ) : (
          <label>
            API key
            <input name="api_key" type="password" autoComplete="off" required placeholder="tsk_…" value={apiKey} onInput={(e) => setApiKey(e.currentTarget.value)} />
            <span class="hint">Exchanged for a token for this tab only; the key itself is not kept.</span>
          </label>
        )}
        {error && (
          <p class="field-error" role="alert">
            {error}
          </p>
        )}
        <button type="submit" class="button-primary" disabled={busy}>
          {busy ? "Signing in…" : "Sign in"}
        </button>
      </form>
    </main>
  );
}
