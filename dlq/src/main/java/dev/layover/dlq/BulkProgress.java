package dev.layover.dlq;

/**
 * Progress of a bulk action, reported after each committed batch.
 *
 * @param batch batches committed so far (1 after the first)
 * @param processed dead letters looked at so far
 * @param changed dead letters replayed (or discarded, or moved back) so far
 * @param skipped dead letters skipped so far (see {@link BulkResult#skipped()})
 * @param expected how many the action expects to look at: the selection's size for ids, the count
 *     matching the filter at the start for a filter (a replay {@code limit} is not applied here)
 */
public record BulkProgress(int batch, long processed, long changed, long skipped, long expected) {}
