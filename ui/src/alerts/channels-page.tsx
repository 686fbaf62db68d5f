/**
 * The organization's notification channels (docs/alerts.md): webhooks (signed by the Standard
 * Webhooks specification; the secret is shown once, right after creation) and Slack incoming
 * webhooks. Each shows whether it is on, why it was disabled, a test button and its delivery log
 * (the last 100 attempts). Members see them; admins add, test, enable and delete.
 */
import { useState } from "preact/hooks";
import type { CurrentUser } from "../api/types";
import { ErrorNotice } from "../views/error-notice";
import { useApi } from "../views/use-api";
import { type Channel, channelDeliveries, createChannel, deleteChannel, enableChannel, listChannels, testChannel } from "./alerts-api";
import "./alerts.css";

export function ChannelsPage({ user }: { user: CurrentUser | null }) {
  const channels = useApi(() => listChannels(), []);
  const [created, setCreated] = useState<Channel | null>(null);
  const [actionError, setActionError] = useState<unknown>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const admin = user?.role === "admin";
  const act = async (work: () => Promise<unknown>, done?: string) => {
    setActionError(null);
    setNotice(null);
    try {
      await work();
      if (done) setNotice(done);
      channels.reload();
    } catch (error) {
      setActionError(error);
    }
  };
  return (
    <main class="page channels-page">
      <h1>Notification channels</h1>
      <p class="muted">Where alert rules send their notifications: a webhook signed by the Standard Webhooks specification, or a Slack incoming webhook.</p>
      {actionError ? <ErrorNotice error={actionError} /> : null}
      {notice ? <p role="status">{notice}</p> : null}
      {admin ? <NewChannel onCreated={(c) => (setCreated(c), channels.reload())} /> : null}
      {created?.signing_secret ? (
        <div class="card" role="alert" aria-label="Signing secret">
          <p>
            The signing secret of <strong>{created.name}</strong>. Copy it now: it is shown once, and never again.
          </p>
          <p class="secret-once" data-testid="signing-secret">
            {created.signing_secret}
          </p>
          <button type="button" class="button-small" onClick={() => setCreated(null)}>
            I have copied it
          </button>
        </div>
      ) : null}
      {channels.error ? <ErrorNotice error={channels.error} onRetry={channels.reload} /> : null}
      {channels.data?.length === 0 ? <p class="muted">No channel yet.</p> : null}
      {channels.data?.map((channel) => (
        <section key={channel.id} class="card" aria-label={`Channel ${channel.name}`} data-channel={channel.name}>
          <h2>
            {channel.name} <span class="muted">({channel.type})</span>
          </h2>
          <p>
            <code>{channel.url}</code>
          </p>
          <p data-testid="channel-status">
            {channel.enabled ? (
              <span class="state-badge" data-state="ok">
                on
              </span>
            ) : (
              <>
                <span class="state-badge" data-state="firing">
                  disabled
                </span>{" "}
                {channel.disabled_reason}
              </>
            )}
            {channel.consecutive_failures > 0 ? <span class="muted"> {channel.consecutive_failures} failed in a row</span> : null}
          </p>
          {admin ? (
            <p>
              <button type="button" class="button-small" disabled={!channel.enabled} onClick={() => act(() => testChannel(channel.id), `A test event was queued for ${channel.name}.`)}>
                Send a test
              </button>{" "}
              {channel.enabled ? null : (
                <button type="button" class="button-small" onClick={() => act(() => enableChannel(channel.id))}>
                  Enable
                </button>
              )}{" "}
              <button type="button" class="button-small" onClick={() => confirm(`Delete the channel "${channel.name}"? Rules that use it drop it.`) && act(() => deleteChannel(channel.id))}>
                Delete
              </button>
            </p>
          ) : null}
          <DeliveryLog channelId={channel.id} />
        </section>
      ))}
    </main>
  );
}

function NewChannel({ onCreated }: { onCreated: (channel: Channel) => void }) {
  const [name, setName] = useState("");
  const [type, setType] = useState<Channel["type"]>("webhook");
  const [url, setUrl] = useState("");
  const [error, setError] = useState<unknown>(null);
  const submit = async (e: Event) => {
    e.preventDefault();
    setError(null);
    try {
      onCreated(await createChannel({ name, type, url }));
      setName("");
      setUrl("");
    } catch (err) {
      setError(err);
    }
  };
  return (
    <form class="card alert-form" aria-label="New channel" onSubmit={submit}>
      <label>
        Name
        <input required value={name} onInput={(e) => setName(e.currentTarget.value)} />
      </label>
      <label>
        Type
        <select value={type} onChange={(e) => setType(e.currentTarget.value as Channel["type"])}>
          <option value="webhook">Webhook (Standard Webhooks)</option>
          <option value="slack">Slack incoming webhook</option>
        </select>
      </label>
      <label class="wide">
        URL
        <input required type="url" value={url} placeholder={type === "slack" ? "https://hooks.slack.com/services/..." : "https://example.com/hooks/alerts"} onInput={(e) => setUrl(e.currentTarget.value)} />
      </label>
      {error ? (
        <div class="wide">
          <ErrorNotice error={error} />
        </div>
      ) : null}
      <div class="wide">
        <button type="submit">Add the channel</button>
      </div>
    </form>
  );
}

function DeliveryLog({ channelId }: { channelId: string }) {
  const [open, setOpen] = useState(false);
  const log = useApi(() => (open ? channelDeliveries(channelId) : Promise.resolve([])), [open, channelId]);
  return (
    <details onToggle={(e) => setOpen((e.currentTarget as HTMLDetailsElement).open)}>
      <summary>Delivery log</summary>
      {log.error ? <ErrorNotice error={log.error} onRetry={log.reload} /> : null}
      {open ? (
        <button type="button" class="button-small" onClick={log.reload}>
          Refresh
        </button>
      ) : null}
      {log.data && log.data.length === 0 ? <p class="muted">Nothing delivered yet.</p> : null}
      {log.data && log.data.length > 0 ? (
        <table class="alert-list" aria-label="Deliveries">
          <thead>
            <tr>
              <th>At</th>
              <th>Event</th>
              <th>Status</th>
              <th>Latency</th>
              <th>webhook-id</th>
            </tr>
          </thead>
          <tbody>
            {log.data.map((d, i) => (
              <tr key={`${d.webhook_id}-${i}`}>
                <td>{new Date(d.at).toLocaleString()}</td>
                <td>{d.type}</td>
                <td>{d.status ?? "no answer"}{d.error ? <div class="muted">{d.error}</div> : null}</td>
                <td>{d.latency_ms} ms</td>
                <td>
                  <code>{d.webhook_id}</code>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
    </details>
  );
}
