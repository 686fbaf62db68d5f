import { registerNotificationChannels } from "./alerts/channel-routes";
import { registerAlertRules } from "./alerts/rule-routes";
import { registerAnnotationRatings } from "./annotations/rating-routes";
import { registerAnnotationTemplates } from "./annotations/template-routes";
import { registerAnnotationQueueRecords } from "./annotation-queues/queue-record-routes";
import { registerAnnotationQueues } from "./annotation-queues/queue-routes";
import { authenticate } from "./auth/authenticate";
import { registerCurrentUser } from "./auth/current-user-route";
import { registerLogin } from "./auth/login-routes";
import { registerAnalyticsSettings } from "./analytics/analytics-settings-routes";
import { registerMetrics } from "./analytics/metrics-routes";
import { registerLogout } from "./auth/logout-route";
import { registerAvailableColumns } from "./columns/available-columns-route";
import { registerGeneratedClientCompat } from "./compat/generated-client-records";
import { registerRecordLookups } from "./compat/record-lookup-routes";
import { registerDeleteByFilter } from "./delete-by-filter/delete-by-filter-routes";
import { registerDeletion } from "./deletion/deletion-routes";
import { registerExport } from "./export/export-route";
import { registerExportDownload, registerExportUrl } from "./export/export-url-routes";
import { apiReferencePage } from "./docs/api-reference-page";
import { apiPaths } from "./http/api-paths";
import { createRouter } from "./http/create-router";
import { refuseCrossSiteRequests } from "./http/cross-site-requests";
import { d1RoundTrips } from "./http/d1-round-trips";
import { notFoundHandler, onError } from "./http/errors";
import { API_VERSION, registerHealthcheck } from "./http/healthcheck-route";
import { requestId } from "./http/middleware";
import { securityHeaders } from "./http/security-headers";
import { registerIngest } from "./ingest/ingest-routes";
import { otlpRoutes } from "./otlp/otlp-routes";
import { registerStreamingIngest } from "./ingest/streaming-routes";
import { organizationRate } from "./limits/organization-rate";
import { registerPrices } from "./pricing/price-routes";
import { registerRedactionApply } from "./redaction/apply-route";
import { registerRedactionPolicy } from "./redaction/policy-routes";
import { registerProjectUsage } from "./projects/project-usage";
import { registerLogStreamPages } from "./projects/log-streams-paginated-route";
import { registerProjects } from "./projects/projects-routes";
import { registerRuns } from "./projects/runs-routes";
import { registerCounts } from "./search/count-handler";
import { registerSearch } from "./search/search-handler";
import { upkeepAfterWrites } from "./upkeep/upkeep-request";
import { registerIntegrations } from "./evaluations/integration-routes";
import { registerScorers } from "./evaluations/scorer-routes";
import { registerMetricSettings } from "./evaluations/settings-routes";
import { scoringAfterWrites } from "./evaluations/scoring-request";

/** Routes that need no credentials, served at the root and under /v2. */
function publicRoutes() {
  const router = createRouter();
  registerHealthcheck(router);
  registerLogin(router);
  return router;
}

/** The download of a queued export: its signed URL is the credential (src/export/export-url-routes.ts). */
function signedDownloadRoutes() {
  const router = createRouter();
  registerExportDownload(router);
  return router;
}

/** Everything under /v2 that needs a principal (each also answers at the root: src/http/api-paths.ts). */
function protectedRoutes() {
  const router = createRouter();
  router.use("*", authenticate);
  // Before any route reads its body: an organization over its rate costs nothing more.
  router.use("*", organizationRate);
  registerCurrentUser(router);
  registerLogout(router);
  registerProjects(router);
  registerProjectUsage(router);
  // Before the runs' `/log_streams/{log_stream_id}`, which would take "paginated" for an id.
  registerLogStreamPages(router);
  registerRuns(router);
  registerIngest(router);
  registerStreamingIngest(router);
  registerRedactionPolicy(router);
  registerRedactionApply(router);
  registerAvailableColumns(router);
  // SDK-specific answer shape; before the search routes it wraps.
  registerGeneratedClientCompat(router);
  registerSearch(router);
  registerCounts(router);
  registerMetrics(router);
  registerAnalyticsSettings(router);
  registerNotificationChannels(router);
  registerAlertRules(router);
  registerIntegrations(router);
  registerScorers(router);
  registerMetricSettings(router);
  registerRecordLookups(router);
  registerDeletion(router);
  registerDeleteByFilter(router);
  registerExport(router);
  registerExportUrl(router);
  registerPrices(router);
  registerAnnotationTemplates(router);
  registerAnnotationRatings(router);
  registerAnnotationQueues(router);
  registerAnnotationQueueRecords(router);
  return router;
}

export function createApp() {
  const app = createRouter();
  // Root aliases, the explorer's page and the JSON 404 (contract section 17, src/http/api-paths.ts).
  const paths = apiPaths(
    () => app.routes,
    (request, env, ctx) => app.fetch(request, env, ctx),
  );
  app.use("*", paths.rootAliases);
  app.use("*", d1RoundTrips);
  app.use("*", requestId);
  app.use("*", securityHeaders);
  app.use("*", paths.explorerOrNotFound);
  // Writes leave derived work (text index, metric cells): its upkeep starts once they are answered.
  app.use("*", upkeepAfterWrites);
  // Records written to a run with scorers enabled are queued for scoring once answered (src/evaluations).
  app.use("*", scoringAfterWrites);
  // Before anything reads credentials or a body: a page of another site gets nothing done here.
  app.use("*", refuseCrossSiteRequests);
  // OTLP bodies are protobuf or OTLP/JSON, answered by OTLP's rules (400 for an undecodable body,
  // not our 422); their routes read their bodies themselves (src/otlp/read-body.ts).
  app.route("/", otlpRoutes());
  app.route("/v2", otlpRoutes());
  app.onError(onError);
  app.notFound(notFoundHandler);

  app.route("/", publicRoutes());
  app.route("/v2", publicRoutes());
  app.route("/v2", signedDownloadRoutes());
  app.route("/v2", protectedRoutes());

  app.openAPIRegistry.registerComponent("securitySchemes", "ServiceApiKey", { type: "apiKey", in: "header", name: "Service-API-Key" });
  app.openAPIRegistry.registerComponent("securitySchemes", "AltAoApiKey", { type: "apiKey", in: "header", name: "Alt-AO-API-Key" });
  app.openAPIRegistry.registerComponent("securitySchemes", "OAuth2Password", {
    type: "oauth2",
    flows: { password: { tokenUrl: "/login", scopes: {} } },
  });
  app.openAPIRegistry.registerComponent("securitySchemes", "HTTPBasic", { type: "http", scheme: "basic" });
  app.doc31("/openapi.json", {
    openapi: "3.1.0",
    info: {
      title: "Trace store",
      version: API_VERSION,
      description: "Store, search and erase the sessions, traces and spans of LLM applications.",
    },
    security: [{ ServiceApiKey: [] }, { AltAoApiKey: [] }, { OAuth2Password: [] }, { HTTPBasic: [] }],
  });
  app.get("/docs", apiReferencePage);
  return app;
}
