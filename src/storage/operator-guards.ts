/**
 * What an operator's retry may take besides the statuses it allows, as SQL over the jobs row (the
 * same test as core's retryRefusal): not a workflow job whose parents have not all succeeded,
 * nor a batch member whose ending its batch has counted.
 */
export const RETRY_GUARD = `coalesce(pending_parents, 0) = 0 AND NOT (batch_id IS NOT NULL AND status IN ('dead','cancelled'))`;

/** What a bulk delete may take besides its statuses (with each adapter's notHeld): not a batch member its batch still waits for. */
export const DELETE_GUARD = `NOT (batch_id IS NOT NULL AND status IN ('queued','failed'))`;
