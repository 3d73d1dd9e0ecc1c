package dev.layover.dlq;

import java.time.Instant;
import java.util.List;

/**
 * One row of {@code layover.audit_log}.
 *
 * @param id the row id (newer rows have larger ids)
 * @param at when the action started
 * @param actor who: the name the caller passed
 * @param action {@code replay}, {@code edit}, {@code discard}, {@code move_back}, {@code purge},
 *     or a breaker action such as {@code force_open}
 * @param subject what, when not dead letters (e.g. a provider key), else {@code null}
 * @param count how many changed
 * @param ids the dead letters changed, when chosen by id; else empty
 * @param filterJson the filter used, as JSON, when chosen by filter; else {@code null}
 * @param note the caller's reason, or {@code null}
 * @param detailsJson more, as a JSON object: replay kind, run time, args before and after an edit,
 *     skipped counts
 * @param finishedAt when it ended; {@code null} while a bulk action runs (or if it died)
 */
public record AuditEntry(long id, Instant at, String actor, String action, String subject, long count,
        List<Long> ids, String filterJson, String note, String detailsJson, Instant finishedAt) {

}
