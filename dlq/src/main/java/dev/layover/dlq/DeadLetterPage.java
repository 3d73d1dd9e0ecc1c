package dev.layover.dlq;

import java.util.List;
import java.util.Optional;

/**
 * One keyset page of dead letters, newest park first ({@code parked_at DESC, id DESC}).
 *
 * <p>Pages are stable under inserts and state changes: following {@link #next()} walks every
 * dead letter that matched and was not re-parked meanwhile exactly once (a dead letter parked again
 * during the walk moves to the front, behind the pages already read).
 *
 * @param items the dead letters of this page
 * @param nextCursor the cursor of the next page, or {@code null} on the last page
 */
public record DeadLetterPage(List<DeadLetterSummary> items, String nextCursor) {


    /** @return the cursor to pass to {@link DeadLetters#find(DeadLetterFilter, int, String)} for the next page */
    public Optional<String> next() {
        return Optional.ofNullable(nextCursor);
    }
}
