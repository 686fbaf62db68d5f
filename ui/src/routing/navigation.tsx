/**
 * History-based navigation: the current route as a Preact hook, links that push a history entry
 * (plain <a href>, so a middle click still opens a new tab), and replace() for changes that should
 * not add a back-button step.
 */
import { useEffect, useState } from "preact/hooks";
import type { AnchorHTMLAttributes, TargetedMouseEvent } from "preact";
import { parseLocation, type Route } from "./routes";

type Listener = () => void;
const listeners = new Set<Listener>();

function notify(): void {
  for (const listener of listeners) listener();
}

window.addEventListener("popstate", notify);

export function navigate(href: string, options: { replace?: boolean } = {}): void {
  if (href === location.pathname + location.search) return;
  if (options.replace) history.replaceState(null, "", href);
  else history.pushState(null, "", href);
  notify();
}

export function currentRoute(): Route {
  return parseLocation(location.pathname, location.search);
}

export function useRoute(): Route {
  const [route, setRoute] = useState(currentRoute);
  useEffect(() => {
    const listener = () => setRoute(currentRoute());
    listeners.add(listener);
    return () => void listeners.delete(listener);
  }, []);
  return route;
}

/** An <a> that navigates inside the page on a plain left click. */
export function Link(props: AnchorHTMLAttributes<HTMLAnchorElement> & { href: string }) {
  const onClick = (event: TargetedMouseEvent<HTMLAnchorElement>) => {
    if (event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    event.preventDefault();
    navigate(props.href);
  };
  return <a {...props} onClick={onClick} />;
}
