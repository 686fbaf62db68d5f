/**
 * The box above the records table that finds typed text in inputs, outputs and names: it waits
 * for a pause in typing (DEBOUNCE_MS) and for MIN_SEARCH_TEXT characters before it searches, so
 * a word typed is one search, not one per keystroke. Escape clears it.
 */
import { useEffect, useRef, useState } from "preact/hooks";
import { MIN_SEARCH_TEXT, searchableText } from "./text-query";

const DEBOUNCE_MS = 300;

interface Props {
  /** The text searched now (from the URL). */
  value: string | null;
  onSearch: (text: string | null) => void;
}

export function TextSearchBox({ value, onSearch }: Props) {
  const [typed, setTyped] = useState(value ?? "");
  // The page's handler as of the last render: the URL may have changed during the pause.
  const search = useRef(onSearch);
  search.current = onSearch;
  // Back and forward change the URL's text: the box follows.
  useEffect(() => setTyped(value ?? ""), [value]);
  useEffect(() => {
    const text = searchableText(typed);
    if (text === value) return;
    const timer = setTimeout(() => search.current(text), DEBOUNCE_MS);
    return () => clearTimeout(timer);
  }, [typed]);
  const short = typed.trim().length > 0 && searchableText(typed) === null;
  return (
    <div class="text-search" role="search">
      <input
        type="search"
        aria-label="Search inputs, outputs and names"
        placeholder="Search inputs, outputs and names"
        value={typed}
        onInput={(e) => setTyped(e.currentTarget.value)}
        onKeyDown={(e) => {
          if (e.key === "Escape") setTyped("");
        }}
        data-testid="text-search"
      />
      {short ? <span class="muted small">at least {MIN_SEARCH_TEXT} characters</span> : null}
    </div>
  );
}
