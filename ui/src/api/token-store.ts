/**
 * The bearer token lives in sessionStorage: it lasts as long as the tab, is not shared with other
 * tabs, and signing out removes it. API keys and passwords are never stored.
 */
const KEY = "trace-store.token";

export function readToken(): string | null {
  try {
    return sessionStorage.getItem(KEY);
  } catch {
    return null;
  }
}

export function saveToken(token: string): void {
  sessionStorage.setItem(KEY, token);
}

export function clearToken(): void {
  try {
    sessionStorage.removeItem(KEY);
  } catch {
    // storage unavailable: nothing was kept
  }
}
