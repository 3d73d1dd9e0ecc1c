package dev.layover.core.internal.schedule;

import dev.layover.core.schedule.MissedRuns;
import dev.layover.core.schedule.Overlap;
import dev.layover.core.schedule.Timing;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

/**
 * What a claim of a due schedule does: which occurrences it enqueues, its next occurrence, when the
 * scheduler looks at it again, and the outcome it records. A pure function of the schedule's timing
 * and policies, its stored state and the time of the claim (the database's).
 *
 * <ol>
 *   <li>The due occurrences are those from {@code next_at} to now. An occurrence held by the
 *       overlap policy {@code QUEUE} is never missed: it comes first.
 *   <li>The missed-run policy chooses among the others: {@code skip} those older than its grace
 *       period, {@code run_last} the latest only, {@code catch_up} those within its window (at most
 *       {@link #CATCH_UP_MAX}).
 *   <li>The overlap policy, when the previous occurrence's job is still in the queue: {@code skip}
 *       drops them, {@code queue} holds the first (looked at again after {@code recheck}),
 *       {@code allow} enqueues. {@code queue} enqueues one occurrence per claim and holds the next.
 * </ol>
 */
final class Occurrences {

    /** The most occurrences one claim enqueues for a catch-up. */
    public static final int CATCH_UP_MAX = 1000;

    /** Occurrences walked before the walk jumps to the last hour (a tiny interval down for long). */
    static final int MAX_STEPS = 100_000;

    private Occurrences() {}

    /**
     * What a claim does.
     *
     * @param enqueue the occurrences to enqueue, oldest first
     * @param nextAt the schedule's next occurrence
     * @param dueAt when the scheduler looks at it again
     * @param held whether {@code nextAt} is held by the overlap policy
     * @param outcome what to record in {@code last_outcome}, or null to keep it
     */
    public record Decision(List<Instant> enqueue, Instant nextAt, Instant dueAt, boolean held, String outcome) {}

    /**
     * @param timing the schedule's timing
     * @param missed its missed-run policy
     * @param overlap its overlap policy
     * @param nextAt its stored next occurrence
     * @param held whether that occurrence is held by the overlap policy
     * @param lastLive whether its previous occurrence's job is still in the queue
     * @param now the time of the claim
     * @param recheck how soon a held occurrence is looked at again
     * @return the decision
     */
    public static Decision decide(Timing timing, MissedRuns missed, Overlap overlap, Instant nextAt, boolean held,
            boolean lastLive, Instant now, Duration recheck) {
        if (nextAt.isAfter(now)) {
            return new Decision(List.of(), nextAt, nextAt, false, null);
        }
        Instant exempt = held ? nextAt : null;
        Instant from = held ? timing.next(nextAt) : nextAt;
        Instant lower = switch (missed.policy()) {
            case SKIP, CATCH_UP -> now.minus(missed.window());
            case RUN_LAST -> null;
        };
        boolean missedAny = false;
        if (lower != null && from.isBefore(lower)) {
            missedAny = true;
            from = atOrAfter(timing, lower);
        }
        List<Instant> candidates = new ArrayList<>();
        int steps = 0;
        Instant o = from;
        while (!o.isAfter(now)) {
            if (missed.policy() == MissedRuns.Policy.RUN_LAST && !candidates.isEmpty()) {
                candidates.clear();
                missedAny = true;
            }
            candidates.add(o);
            if (candidates.size() > CATCH_UP_MAX) {
                candidates.remove(0); // the latest ones are kept
                missedAny = true;
            }
            o = timing.next(o);
            if (++steps > MAX_STEPS) {
                Instant jump = atOrAfter(timing, now.minus(Duration.ofHours(1)));
                if (jump.isAfter(o)) {
                    o = jump;
                    missedAny = true;
                }
                steps = 0;
            }
        }
        Instant after = o;
        List<Instant> selected = new ArrayList<>(candidates.size() + 1);
        if (exempt != null) {
            selected.add(exempt);
        }
        selected.addAll(candidates);
        if (selected.isEmpty()) {
            return new Decision(List.of(), after, after, false, "missed");
        }
        if (lastLive && overlap == Overlap.SKIP) {
            return new Decision(List.of(), after, after, false, "skipped_overlap");
        }
        if (lastLive && overlap == Overlap.QUEUE) {
            return new Decision(List.of(), selected.get(0), now.plus(recheck), true, "held_overlap");
        }
        if (overlap == Overlap.QUEUE && selected.size() > 1) {
            return new Decision(List.of(selected.get(0)), selected.get(1), now.plus(recheck), true,
                    exempt != null ? "enqueued" : "enqueued_catch_up");
        }
        String outcome = selected.size() > 1 ? "enqueued_catch_up" : missedAny ? "enqueued_after_missed" : "enqueued";
        return new Decision(List.copyOf(selected), after, after, false, outcome);
    }

    /** @return the first occurrence at or after {@code t} */
    static Instant atOrAfter(Timing timing, Instant t) {
        return timing.next(t.minusMillis(1));
    }
}
