/**
 * An input or output as a person reads it: chat messages as a conversation, retrieved documents
 * as a list, JSON pretty-printed and collapsible (at any depth: ./json-text.ts), long text cut
 * with "show all".
 */
import type { ComponentChild } from "preact";
import { useState } from "preact/hooks";
import { asMessages } from "../format/values";
import { Highlighted, useHasMatchAfter } from "../text-search/highlighted";
import { jsonText, nestingDepth } from "./json-text";

const TEXT_LIMIT = 1_000;

export function LongText({ text }: { text: string }) {
  const [all, setAll] = useState(false);
  // A match of the text search past the cut: the whole text, so that the match is seen.
  const matchPastCut = useHasMatchAfter(text, TEXT_LIMIT);
  if (text.length <= TEXT_LIMIT || all || matchPastCut) {
    return (
      <div class="long-text">
        <Highlighted text={text} />
      </div>
    );
  }
  return (
    <div class="long-text">
      <Highlighted text={text.slice(0, TEXT_LIMIT)} />…{" "}
      <button type="button" class="link-button" onClick={() => setAll(true)}>
        Show all ({text.length.toLocaleString("en-US")} characters)
      </button>
    </div>
  );
}

/**
 * Levels shown as a tree. Deeper values (text an end user wrote can nest thousands of levels) wait
 * behind a button and are then shown as text: a tree that deep would overflow the renderer's stack
 * and be unreadable anyway.
 */
const TREE_DEPTH = 20;

function DeepValue({ value }: { value: object }) {
  const [shown, setShown] = useState(false);
  if (shown) {
    return (
      <div class="json-deep-text">
        <LongText text={jsonText(value)} />
      </div>
    );
  }
  return (
    <button type="button" class="link-button" onClick={() => setShown(true)}>
      Show the {nestingDepth(value).toLocaleString("en-US")} levels below as text
    </button>
  );
}

function JsonNode({ value, label, depth }: { value: object; label: ComponentChild; depth: number }) {
  const entries = Array.isArray(value) ? value.map((v, i) => [String(i), v] as const) : Object.entries(value);
  // A chain of single entries ({"a": {"b": …}}) opens by itself down to the data.
  const [open, setOpen] = useState(depth < 2 || entries.length === 1);
  const summary = Array.isArray(value) ? `[${entries.length}]` : `{${entries.length}}`;
  return (
    <details class="json-node" open={open} onToggle={(e) => setOpen((e.currentTarget as HTMLDetailsElement).open)}>
      <summary>
        {label}
        <span class="muted">{summary}</span>
      </summary>
      {/* Children exist only while open: a large closed value costs nothing. */}
      {open ? (
        <div class="json-children">
          {depth + 1 >= TREE_DEPTH && entries.length > 0 ? (
            <DeepValue value={value} />
          ) : (
            entries.map(([k, v]) => <JsonValue key={k} name={k} value={v} depth={depth + 1} />)
          )}
        </div>
      ) : null}
    </details>
  );
}

function JsonValue({ value, name, depth }: { value: unknown; name?: string; depth: number }) {
  const label = name !== undefined ? <span class="json-key">{name}: </span> : null;
  if (value === null || typeof value !== "object") {
    const kind = value === null ? "null" : typeof value;
    return (
      <div class="json-line">
        {label}
        <span class={`json-${kind}`}>
          <Highlighted text={typeof value === "string" ? JSON.stringify(value) : String(value)} />
        </span>
      </div>
    );
  }
  return <JsonNode value={value} label={label} depth={depth} />;
}

export function JsonView({ value }: { value: unknown }) {
  return (
    <div class="json-view">
      <JsonValue value={value} depth={0} />
    </div>
  );
}

export function Conversation({ messages }: { messages: { role: string; content: string }[] }) {
  return (
    <ol class="conversation">
      {messages.map((m, i) => (
        <li key={i} class={`message message-${m.role}`}>
          <span class="message-role">{m.role}</span>
          <LongText text={m.content} />
        </li>
      ))}
    </ol>
  );
}

function parsedJson(text: string): unknown {
  const trimmed = text.trim();
  if (!(trimmed.startsWith("{") || trimmed.startsWith("["))) return undefined;
  try {
    return JSON.parse(trimmed);
  } catch {
    return undefined;
  }
}

export function ContentView({ value }: { value: unknown }) {
  if (value === null || value === undefined || value === "") return <p class="muted">None</p>;
  const messages = asMessages(value);
  if (messages) return <Conversation messages={messages} />;
  if (typeof value === "string") {
    const json = parsedJson(value);
    return json === undefined ? <LongText text={value} /> : <JsonView value={json} />;
  }
  if (Array.isArray(value) && value.length > 0 && value.every((d) => d && typeof d === "object" && "content" in d)) {
    return (
      <ol class="documents">
        {value.map((d, i) => (
          <li key={i}>
            <LongText text={String((d as { content: unknown }).content)} />
            {(d as { metadata?: unknown }).metadata ? <JsonView value={(d as { metadata?: unknown }).metadata} /> : null}
          </li>
        ))}
      </ol>
    );
  }
  return <JsonView value={value} />;
}
