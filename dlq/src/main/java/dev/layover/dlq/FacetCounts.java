package dev.layover.dlq;

import java.util.Map;

/**
 * Counts of the dead letters matching a filter, in total and grouped by each facet (one query,
 * {@code GROUP BY GROUPING SETS}). Every map is ordered by count, largest first. Each facet is
 * counted within the whole filter (a filter on state {@code parked} gives only {@code parked} in
 * {@link #byState()}).
 *
 * @param total dead letters matching the filter
 * @param byState count per state code
 * @param byFailureType count per failure type code
 * @param byJobType count per job type
 * @param byProviderKey count per provider key; the key {@code null} counts dead letters without
 *     one
 */
public record FacetCounts(
        long total,
        Map<String, Long> byState,
        Map<String, Long> byFailureType,
        Map<String, Long> byJobType,
        Map<String, Long> byProviderKey) {}
