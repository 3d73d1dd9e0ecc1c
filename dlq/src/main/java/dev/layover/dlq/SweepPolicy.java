package dev.layover.dlq;

import dev.layover.core.provider.state.BreakerState;
import java.time.Duration;
import java.time.Instant;

/**
 * The recovery sweep's decisions, without a database: what a run does for one provider key, given
 * what the keys query read ({@link SweepKey}, whose {@code now} is the database's clock) and the
 * state the last run left ({@link SweepState}, changed in place: the runner works on a copy).
 * {@link SweepRunner} reads, replays and saves around these.
 */
final class SweepPolicy {

    /** What a run does for a key. */
    enum Mode {
        /** The breaker is closed: sweep its parked dead letters in batches. */
        SWEEP,
        /** The breaker is open or half-open: maybe replay one dead letter as the recovery trial. */
        TRIAL
    }

    /** The next step of a sweep. */
    sealed interface SweepStep {
        /** Nothing to do in this run (cooling down, before the next batch, last batches still pending). */
        record Wait() implements SweepStep {}

        /**
         * Too many of the last batches failed again: the batch size was cut.
         *
         * @param failing replays that parked again or are retrying
         * @param parkedAgain of which parked again
         * @param retrying of which are retrying
         * @param from the batch size before
         * @param to the batch size now
         */
        record SlowDown(long failing, long parkedAgain, long retrying, int from, int to) implements SweepStep {}

        /**
         * Replay the next batch.
         *
         * @param size how many dead letters at most
         * @param runAt when the replayed jobs are due (spread after it)
         */
        record Batch(int size, Instant runAt) implements SweepStep {}
    }

    /**
     * How the sweep's replays of a key are doing.
     *
     * @param pending replayed jobs not run yet
     * @param retrying replayed jobs that failed (an attempt spent) and wait for a retry
     * @param parkedAgain replayed jobs that parked again (in review) since the last check
     */
    record Health(long pending, long retrying, long parkedAgain) {}

    /** The next step of a trial: none, or a replay of one dead letter due at {@code runAt}. */
    record TrialStep(boolean replay, Instant runAt, Duration interval) {
        static final TrialStep NONE = new TrialStep(false, null, null);
    }

    private final RecoverySweep settings;

    SweepPolicy(RecoverySweep settings) {
        this.settings = settings;
    }

    /**
     * Starts a run for a key: a new trial period when the breaker closed since, a new sweep when it
     * closed since the last one handled, the phase the breaker's state implies.
     *
     * @return whether this run sweeps or considers a trial
     */
    Mode enter(SweepKey k, SweepState s) {
        if (k.newTrialPeriod || !k.hasState) {
            s.trials = 0;
            s.trialsSince = k.closedAt;
            s.nextTrialAt = null;
        }
        if (k.breaker == BreakerState.CLOSED) {
            if (k.newClose) {
                startSweep(k, s);
            } else if (SweepState.BREAKER_OPEN.equals(s.phase)) {
                s.phase = SweepState.IDLE;
                s.note = "breaker closed";
            }
            return Mode.SWEEP;
        }
        s.phase = SweepState.BREAKER_OPEN;
        return Mode.TRIAL;
    }

    /** @return whether the sweep was running (not idle, not stopped by an open breaker) */
    static boolean sweeping(SweepState s) {
        return SweepState.SWEEPING.equals(s.phase) || SweepState.WAITING.equals(s.phase)
                || SweepState.SLOWED.equals(s.phase);
    }

    private void startSweep(SweepKey k, SweepState s) {
        s.handledClosedAt = k.closedAt;
        s.cutoff = k.closedAt.plus(settings.closeGrace());
        s.episodeStartedAt = k.now;
        s.batchSize = settings.firstBatch();
        s.batches = 0;
        s.replayed = 0;
        s.movedToReview = 0;
        s.parkedAgain = 0;
        s.lastBatchAt = null;
        s.lastBatchCount = null;
        s.lastBatchFirstId = null;
        s.lastBatchLastId = null;
        s.nextBatchAt = null;
        s.checkedAt = k.now;
        s.phase = SweepState.IDLE;
        s.note = "breaker closed at " + k.closedAt + "; sweeping what parked up to " + s.cutoff;
    }

    /** @return whether the next step needs the health of the last batches ({@link #nextSweepStep}) */
    static boolean needsHealth(SweepKey k, SweepState s) {
        return k.cooldownUntil == null && sweeping(s) && s.lastBatchAt != null
                && (s.nextBatchAt == null || !k.now.isBefore(s.nextBatchAt));
    }

    /** @return the instant the health counts from: the last check, else the last batch */
    static Instant healthSince(SweepState s) {
        return s.checkedAt != null ? s.checkedAt : s.lastBatchAt;
    }

    /**
     * Decides the sweep's next step: wait while the key cools down or before the next batch is
     * due, slow down when a share of at least {@link RecoverySweep#SLOW_DOWN_RATIO} of the last
     * batch failed again, wait while more than half of it has not run, else the next batch (grown
     * when the last one went well).
     *
     * @param h the health of the last batches, when {@link #needsHealth}; else null
     */
    SweepStep nextSweepStep(SweepKey k, SweepState s, Health h) {
        Instant now = k.now;
        boolean running = sweeping(s);
        if (k.cooldownUntil != null) {
            if (running) {
                s.phase = SweepState.WAITING;
                s.note = "the key cools down until " + k.cooldownUntil;
            }
            return new SweepStep.Wait();
        }
        if (s.nextBatchAt != null && now.isBefore(s.nextBatchAt)) {
            return new SweepStep.Wait();
        }
        int size = running ? s.batchSize : settings.firstBatch();
        if (running && s.lastBatchAt != null && h != null) {
            s.checkedAt = now;
            s.parkedAgain += h.parkedAgain();
            long failing = h.parkedAgain() + h.retrying();
            int last = s.lastBatchCount == null ? 0 : s.lastBatchCount;
            if (failing > 0 && failing >= Math.max(1, Math.ceil(last * RecoverySweep.SLOW_DOWN_RATIO))) {
                int smaller = Math.max(1, Math.min(s.batchSize, last) / 2);
                SweepStep.SlowDown d = new SweepStep.SlowDown(failing, h.parkedAgain(), h.retrying(), s.batchSize, smaller);
                s.batchSize = smaller;
                s.nextBatchAt = now.plus(settings.spread());
                s.phase = SweepState.SLOWED;
                s.note = failing + " replays failed again (" + h.parkedAgain() + " parked again, " + h.retrying()
                        + " retrying); batch size cut to " + smaller;
                return d;
            }
            if (h.pending() > Math.max(1, last / 2)) {
                s.phase = SweepState.WAITING;
                s.note = h.pending() + " jobs of the last batches have not run yet";
                return new SweepStep.Wait();
            }
            size = failing == 0 && !SweepState.SLOWED.equals(s.phase) && last >= s.batchSize
                    ? settings.grow(s.batchSize) : s.batchSize;
        }
        Instant runAt = now;
        if (s.handledClosedAt != null && runAt.isBefore(s.handledClosedAt.plus(RecoverySweep.SETTLE))) {
            runAt = s.handledClosedAt.plus(RecoverySweep.SETTLE);
        }
        return new SweepStep.Batch(size, runAt);
    }

    /**
     * Nothing was left to replay.
     *
     * @return whether a running sweep ended now (the runner logs it)
     */
    static boolean nothingLeft(SweepState s) {
        if (!sweeping(s)) {
            return false;
        }
        s.phase = SweepState.IDLE;
        s.note = "done: " + s.replayed + " replayed in " + s.batches + " batches";
        return true;
    }

    /** A batch was replayed: the state records it, and the next batch is due one spread after its jobs. */
    void batchReplayed(SweepKey k, SweepState s, SweepStep.Batch b, long replayed, long movedToReview, long firstId,
            long lastId) {
        int number = s.batches + 1;
        s.batches = number;
        s.replayed += replayed;
        s.movedToReview += movedToReview;
        s.batchSize = b.size();
        s.lastBatchAt = k.now;
        s.lastBatchCount = (int) replayed;
        s.lastBatchFirstId = firstId;
        s.lastBatchLastId = lastId;
        s.nextBatchAt = b.runAt().plus(settings.spread());
        s.checkedAt = k.now;
        s.phase = SweepState.SWEEPING;
        s.note = "batch " + number + ": " + replayed + " replayed (ids " + firstId + ".." + lastId + ")";
    }

    /**
     * Decides whether an open key gets a trial now: not with trials off, not while an operator holds
     * the breaker open or a trial is in flight, not before the next trial is due (the interval grows
     * with each trial of the outage); the runner then checks for live traffic and a candidate.
     */
    TrialStep nextTrialStep(SweepKey k, SweepState s) {
        if (!settings.trials()) {
            s.note = "breaker " + k.breaker.code() + "; trials are off";
            return TrialStep.NONE;
        }
        if (k.heldOpen) {
            s.note = "breaker held open by an operator: no trial";
            return TrialStep.NONE;
        }
        if (k.trialInFlight) {
            s.note = "breaker half-open: a trial call is in flight";
            return TrialStep.NONE;
        }
        Instant now = k.now;
        if (s.nextTrialAt != null && now.isBefore(s.nextTrialAt)) {
            return TrialStep.NONE;
        }
        Instant openUntil = k.openUntil == null ? now : k.openUntil;
        Instant runAt = (openUntil.isAfter(now) ? openUntil : now).plus(RecoverySweep.TRIAL_MARGIN);
        return new TrialStep(true, runAt, settings.trialInterval(s.trials));
    }

    /** A trial was replayed: the next is due one (growing) interval after it. */
    static void trialReplayed(SweepKey k, SweepState s, TrialStep t, long deadLetterId, Instant runAt) {
        s.trials = s.trials + 1;
        s.lastTrialAt = k.now;
        s.lastTrialRunAt = runAt != null ? runAt : t.runAt();
        s.lastTrialDeadLetterId = deadLetterId;
        s.nextTrialAt = s.lastTrialRunAt.plus(t.interval());
        s.note = "trial " + s.trials + ": dead letter " + deadLetterId + " due " + s.lastTrialRunAt;
    }
}
