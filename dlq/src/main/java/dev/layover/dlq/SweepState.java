package dev.layover.dlq;

import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

/**
 * A provider key's row of {@code layover.recovery_state}: what the recovery sweep carries from one
 * run to the next (whichever worker runs it next goes on where the last one stopped). Mutable: a
 * run works on a {@link #copy()} and saves it when it changed.
 */
/** A key's row of {@code layover.recovery_state}. */
final class SweepState {

    static final String IDLE = "idle";
    static final String SWEEPING = "sweeping";
    static final String WAITING = "waiting";
    static final String SLOWED = "slowed";
    static final String BREAKER_OPEN = "breaker_open";

    /** The values in {@link DlqSql#RECOVERY_SAVE}'s order (after the key). */
    List<Object> row() {
        return values();
    }

    String phase;
    Instant handledClosedAt;
    Instant cutoff;
    Instant episodeStartedAt;
    int batchSize;
    int batches;
    long replayed;
    long movedToReview;
    long parkedAgain;
    Instant lastBatchAt;
    Integer lastBatchCount;
    Long lastBatchFirstId;
    Long lastBatchLastId;
    Instant nextBatchAt;
    Instant checkedAt;
    int trials;
    Instant trialsSince;
    Instant lastTrialAt;
    Instant lastTrialRunAt;
    Long lastTrialDeadLetterId;
    Instant nextTrialAt;
    String note;

    SweepState copy() {
        SweepState s = new SweepState();
        s.phase = phase;
        s.handledClosedAt = handledClosedAt;
        s.cutoff = cutoff;
        s.episodeStartedAt = episodeStartedAt;
        s.batchSize = batchSize;
        s.batches = batches;
        s.replayed = replayed;
        s.movedToReview = movedToReview;
        s.parkedAgain = parkedAgain;
        s.lastBatchAt = lastBatchAt;
        s.lastBatchCount = lastBatchCount;
        s.lastBatchFirstId = lastBatchFirstId;
        s.lastBatchLastId = lastBatchLastId;
        s.nextBatchAt = nextBatchAt;
        s.checkedAt = checkedAt;
        s.trials = trials;
        s.trialsSince = trialsSince;
        s.lastTrialAt = lastTrialAt;
        s.lastTrialRunAt = lastTrialRunAt;
        s.lastTrialDeadLetterId = lastTrialDeadLetterId;
        s.nextTrialAt = nextTrialAt;
        s.note = note;
        return s;
    }

    private List<Object> values() {
        List<Object> v = new ArrayList<>();
        v.add(phase);
        v.add(handledClosedAt);
        v.add(cutoff);
        v.add(episodeStartedAt);
        v.add(batchSize);
        v.add(batches);
        v.add(replayed);
        v.add(movedToReview);
        v.add(parkedAgain);
        v.add(lastBatchAt);
        v.add(lastBatchCount);
        v.add(lastBatchFirstId);
        v.add(lastBatchLastId);
        v.add(nextBatchAt);
        v.add(checkedAt);
        v.add(trials);
        v.add(trialsSince);
        v.add(lastTrialAt);
        v.add(lastTrialRunAt);
        v.add(lastTrialDeadLetterId);
        v.add(nextTrialAt);
        v.add(note);
        return v;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof SweepState other && values().equals(other.values());
    }

    @Override
    public int hashCode() {
        return values().hashCode();
    }
}
