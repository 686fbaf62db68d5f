/** A failed call shown as what it is: never a blank page. */
import { ApiError } from "../api/client";

export function describeError(error: unknown): { title: string; detail: string } {
  if (!(error instanceof ApiError)) return { title: "Something went wrong", detail: error instanceof Error ? error.message : String(error) };
  switch (error.status) {
    case 0:
      return { title: "Service unreachable", detail: error.message };
    case 401:
      return { title: "Signed out", detail: "Your session ended. Sign in again." };
    case 403:
      return { title: "Not allowed (403)", detail: `Your account may not do this: ${error.message}` };
    case 404:
      return { title: "Not found (404)", detail: `${error.message}. It may have been deleted, or belong to another organization.` };
    case 422:
      return { title: "The request was refused (422)", detail: error.message };
    case 429:
      return {
        title: "Too many requests (429)",
        detail: `The service asks to slow down${error.retryAfter ? `: try again in ${error.retryAfter} s` : ""}. ${error.message}`,
      };
    default:
      return { title: error.status >= 500 ? `Service error (${error.status})` : `Request failed (${error.status})`, detail: error.message };
  }
}

export function ErrorNotice({ error, onRetry }: { error: unknown; onRetry?: () => void }) {
  const { title, detail } = describeError(error);
  const status = error instanceof ApiError ? error.status : undefined;
  return (
    <div class="notice notice-error" role="alert" data-status={status}>
      <strong>{title}</strong>
      <span>{detail}</span>
      {onRetry && (
        <button type="button" class="button-small" onClick={onRetry}>
          Try again
        </button>
      )}
    </div>
  );
}
