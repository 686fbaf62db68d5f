-- A record id belongs for ever to the organization, project and run that first wrote it.
-- Ingestion upserts by the client's ids (re-sending a trace updates it instead of duplicating
-- it); this trigger makes an upsert that would move a record into another organization, project
-- or run abort the whole batch, so no client can overwrite or steal another tenant's record by
-- guessing its id. The worker maps the error to a 409.
CREATE TRIGGER `records_ownership_guard`
BEFORE UPDATE OF `organization_id`, `project_id`, `run_id` ON `records`
WHEN OLD.`organization_id` IS NOT NEW.`organization_id`
  OR OLD.`project_id` IS NOT NEW.`project_id`
  OR OLD.`run_id` IS NOT NEW.`run_id`
BEGIN
  SELECT RAISE(ABORT, 'record_ownership_conflict');
END;
